"""pyproject.toml declares ranges, not pins; the two lock files pin versions inside them, and the lowest lock pins
each declared dependency at its lower bound (the versions `make test-lowest` runs the suite on)."""

from __future__ import annotations

import pytest
from packaging.version import Version
from ranges import LOCK, LOWEST_LOCK, declared, lock_extras, locked, lower_bound, normal_name

ALL_EXTRAS = ("tables", "river", "grid", "cluster", "moa", "test")


def test_every_dependency_is_a_range_with_a_lower_and_an_upper_bound():
    loose = [str(r) for r in declared(ALL_EXTRAS) if {s.operator for s in r.specifier} != {">=", "<"}]
    assert not loose, f"not a range `>=low,<high`: {loose}"


@pytest.mark.parametrize("lock", [LOCK, LOWEST_LOCK], ids=lambda p: p.name)
def test_a_lock_pins_every_declared_dependency_inside_its_range(lock):
    pins = locked(lock)
    outside = [
        f"{r} (locked {pins.get(normal_name(r.name))})"
        for r in declared(lock_extras(lock))
        if pins.get(normal_name(r.name)) not in r.specifier
    ]
    assert not outside, f"{lock.name} does not satisfy pyproject.toml (run `make lock`): {outside}"


def test_the_lowest_lock_holds_each_declared_dependency_at_its_lower_bound():
    pins = locked(LOWEST_LOCK)
    above = [
        f"{r} (locked {pins[normal_name(r.name)]})"
        for r in declared(lock_extras(LOWEST_LOCK))
        if Version(pins[normal_name(r.name)]) != Version(lower_bound(r))
    ]
    assert not above, f"a lower bound that the lowest versions' suite does not run on: {above}"
