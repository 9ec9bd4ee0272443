"""Tools beside the library: benchmarks and the process sampler they share."""
