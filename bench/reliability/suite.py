"""The one registry every case module adds itself to (see `cases/`)."""

from bench.reliability.registry import Registry

SUITE = Registry()
