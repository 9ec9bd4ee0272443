package policy

import (
	"slices"
	"testing"
	"time"
)

var (
	t0       = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	settings = Settings{Step: 1, RoundTimeout: 10 * time.Second}
	abc      = []Cluster{{"c", true}, {"a", true}, {"b", true}} // config order, not by name
)

func at(seconds float64) time.Time { return t0.Add(time.Duration(seconds * float64(time.Second))) }

func TestDecide(t *testing.T) {
	cases := []struct {
		name       string
		settings   Settings
		configured []Cluster
		current    []string
		roundStart time.Time
		now        time.Time
		want       []string
		wantStart  time.Time
		wantAgain  time.Duration
	}{
		{"first round takes the first in config order", settings, abc, nil, time.Time{}, at(0),
			[]string{"c"}, at(0), 10 * time.Second},
		{"no escalation before the timeout", settings, abc, []string{"c"}, at(0), at(9.5),
			[]string{"c"}, at(0), 500 * time.Millisecond},
		{"escalation at the timeout keeps earlier nominees", settings, abc, []string{"c"}, at(0), at(10),
			[]string{"c", "a"}, at(10), 10 * time.Second},
		{"the last round leaves nothing to recheck", settings, abc, []string{"c", "a"}, at(10), at(20),
			[]string{"c", "a", "b"}, at(20), 0},
		{"all nominated: nothing changes", settings, abc, []string{"c", "a", "b"}, at(20), at(40),
			[]string{"c", "a", "b"}, at(40), 0},
		{"a step of two", Settings{Step: 2, RoundTimeout: time.Second}, abc, nil, time.Time{}, at(0),
			[]string{"c", "a"}, at(0), time.Second},
		{"inactive clusters are passed over without a round", settings,
			[]Cluster{{"c", false}, {"a", true}, {"b", true}}, nil, time.Time{}, at(0),
			[]string{"a"}, at(0), 10 * time.Second},
		{"nominees outside the config are dropped", settings, abc, []string{"gone", "c"}, at(0), at(1),
			[]string{"c"}, at(0), 9 * time.Second},
		{"nominees all gone: a new first round", settings, abc, []string{"gone"}, at(0), at(1),
			[]string{"c"}, at(1), 10 * time.Second},
		{"after a restart the nominees are adopted and get a full round", settings, abc,
			[]string{"c"}, time.Time{}, at(5), []string{"c"}, at(5), 10 * time.Second},
		{"no active cluster: look again after a round", settings, []Cluster{{"c", false}}, nil,
			time.Time{}, at(0), nil, at(0), 10 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(tc.settings, tc.configured, tc.current, tc.roundStart, tc.now)
			if !slices.Equal(got.Nominees, tc.want) || !got.RoundStart.Equal(tc.wantStart) ||
				got.Recheck != tc.wantAgain {
				t.Errorf("got %v from %v again in %v, want %v from %v again in %v",
					got.Nominees, got.RoundStart, got.Recheck, tc.want, tc.wantStart, tc.wantAgain)
			}
		})
	}
}

func TestNeverMoreThanTheAPIMaximum(t *testing.T) {
	var many []Cluster
	var names []string
	for i := range 25 {
		name := string(rune('a'+i%26)) + string(rune('a'+i/26))
		many = append(many, Cluster{name, true})
		names = append(names, name)
	}
	got := Decide(Settings{Step: 25, RoundTimeout: time.Second}, many, nil, time.Time{}, t0)
	if len(got.Nominees) != MaxNominees || !slices.Equal(got.Nominees, names[:MaxNominees]) {
		t.Errorf("got %d nominees %v, want the first %d", len(got.Nominees), got.Nominees, MaxNominees)
	}
}
