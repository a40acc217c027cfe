"""NoC timing (nnx/sim/noc.py) against hand-computed cycles."""

import random

import pytest

from nnx.sim.noc import Noc, hops, transfer_cycles, xy_route


def test_xy_route_goes_x_first_then_y():
    # 4x3 mesh: core 1 = (1, 0), core 10 = (2, 2)
    assert xy_route(1, 10, 4) == [(1, 2), (2, 6), (6, 10)]
    assert xy_route(10, 1, 4) == [(10, 9), (9, 5), (5, 1)]
    assert xy_route(5, 5, 4) == []
    assert hops(1, 10, 4) == 3


def test_uncontended_transfer():
    noc = Noc(4, 4, hop_latency=2, link_bytes_per_cycle=16)
    # 3 hops, 100 bytes -> 7 cycles of link time each: arrival 10 + 3*2 + 7
    assert noc.transfer(0, 6, 100, ready=10) == (10, 23)
    assert transfer_cycles(100, 3, 2, 16) == 13
    assert noc.bytes == 100 and noc.byte_hops == 300


def test_local_transfer_is_free():
    noc = Noc(2, 2, hop_latency=3, link_bytes_per_cycle=8)
    assert noc.transfer(3, 3, 1 << 20, ready=5) == (5, 5)
    assert noc.byte_hops == 0


def test_contention_on_a_shared_link_delays_the_second_message():
    noc = Noc(4, 1, hop_latency=1, link_bytes_per_cycle=4)
    # both use link (1, 2); the first holds it during [0+1, 0+1+10) = [1, 11)
    assert noc.transfer(0, 2, 40, ready=0) == (0, 12)
    # second: route (1,2),(2,3); link (1,2) at [s, s+10) must start >= 11 -> s = 11
    assert noc.transfer(1, 3, 40, ready=0) == (11, 11 + 2 + 10)
    assert noc.link_bytes[(1, 2)] == 80


def test_disjoint_routes_do_not_interfere():
    noc = Noc(4, 4, hop_latency=1, link_bytes_per_cycle=4)
    a = noc.transfer(0, 3, 64, ready=0)
    b = noc.transfer(12, 15, 64, ready=0)
    assert a == b == (0, 3 + 16)


def test_opposite_directions_are_separate_links():
    noc = Noc(2, 1, hop_latency=1, link_bytes_per_cycle=1)
    assert noc.transfer(0, 1, 10, ready=0) == (0, 11)
    assert noc.transfer(1, 0, 10, ready=0) == (0, 11)


def test_an_earlier_message_fills_a_gap():
    noc = Noc(2, 1, hop_latency=0, link_bytes_per_cycle=1)
    assert noc.transfer(0, 1, 5, ready=100) == (100, 105)
    # processed later but ready earlier, fits in [0, 100)
    assert noc.transfer(0, 1, 10, ready=0) == (0, 10)
    # does not fit before 100 from 95: goes after
    assert noc.transfer(0, 1, 10, ready=95) == (105, 115)


def test_bad_core_is_an_error():
    noc = Noc(2, 2, 1, 1)
    with pytest.raises(ValueError, match="outside the 2x2 mesh"):
        noc.transfer(0, 4, 1, 0)


def test_reservations_never_overlap_on_random_traffic():
    rnd = random.Random(7)
    noc = Noc(5, 3, hop_latency=2, link_bytes_per_cycle=8)
    held: dict = {}
    for _ in range(300):
        src, dst = rnd.randrange(15), rnd.randrange(15)
        nbytes = rnd.randrange(1, 500)
        ready = rnd.randrange(0, 2000)
        s, arr = noc.transfer(src, dst, nbytes, ready)
        route = xy_route(src, dst, 5)
        assert s >= ready
        if not route:
            assert arr == ready
            continue
        ser = -(-nbytes // 8)
        assert arr == s + 2 * len(route) + ser
        for i, link in enumerate(route):
            held.setdefault(link, []).append((s + 2 * i, s + 2 * i + ser))
    for ivs in held.values():
        ivs.sort()
        for (a0, b0), (a1, b1) in zip(ivs, ivs[1:]):
            assert b0 <= a1


def test_back_to_back_reservations_merge_and_gaps_stay_usable():
    noc = Noc(2, 1, hop_latency=0, link_bytes_per_cycle=1)
    for k in range(100):  # 100 messages of 10 cycles, back to back from 0
        assert noc.transfer(0, 1, 10, ready=0) == (10 * k, 10 * k + 10)
    busy = noc.busy[(0, 1)]
    assert busy.starts == [0] and busy.ends == [1000]
    assert noc.transfer(0, 1, 5, ready=2000) == (2000, 2005)
    assert noc.transfer(0, 1, 5, ready=1990) == (1990, 1995)  # the gap before 2000
    assert noc.transfer(0, 1, 5, ready=1990) == (1995, 2000)  # exactly fills it: merged
    assert busy.starts == [0, 1990] and busy.ends == [1000, 2005]
    assert noc.transfer(0, 1, 20, ready=500) == (1000, 1020)  # first gap after 500
    assert busy.starts == [0, 1990] and busy.ends == [1020, 2005]
