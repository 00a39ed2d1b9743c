"""Collection: building each commit, measuring its benchmarks, calibrating their spread and
labelling pairs (`collect`, `calibrate`, `record`, `confirm`, `labels`)."""
