// End-to-end tests of `pipeprof simulate` and `pipeprof suggest` (filled in below).
