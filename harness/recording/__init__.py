"""What a run records: the timeline of events and the recorder that watches every cluster."""
