// Command panics is a dispatcher as vendors' fail at start: it logs, then panics on a
// missing setting, leaving a goroutine dump as the last lines of its log.
package main

import (
	"log"
	"os"
)

func main() {
	log.Print("starting the prices dispatcher")
	prices := os.Getenv("PRICES_CONFIGMAP")
	if prices == "" {
		panic("prices ConfigMap not configured: set PRICES_CONFIGMAP")
	}
}
