"""mkdc harness: real MultiKueue environments, timelines, reports."""

__version__ = "0.1.0"
