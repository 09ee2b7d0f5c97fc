"""The NVM side: block store, O_DIRECT reads in flight, fio, and the trace replay against a drive."""
