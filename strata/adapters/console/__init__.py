"""The console adapter: a terminal chat for trying Strata locally (`strata chat`)."""
