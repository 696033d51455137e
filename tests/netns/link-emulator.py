#!/usr/bin/env python3
"""A userspace stand-in for `tc netem`: a point-to-point link between two
network namespaces with a one-way delay, jitter and random loss.

Used by the degraded-link end-to-end test when the kernel has no
`sch_netem`. Run it inside namespace A (`ip netns exec A python3 THIS ...`):
it creates two TUN devices there, moves the second into namespace B, prints
`ready`, then forwards every IP packet read from one device to the other
after DELAY_MS plus or minus up to JITTER_MS (uniform, per packet, so
packets may overtake each other as with netem's `delay D J`), dropping each
with probability LOSS (independently per packet and direction, as netem's
`loss` does). Addresses and links are
configured by the caller.

It exits when its stdin reaches EOF (the test closed it or died), on SIGTERM,
or after MAX_SECONDS, and prints one JSON line of counts per direction on
stderr (`sent`, `lost`, `overflow`). Closing the
TUN file descriptors deletes both devices.

Usage: link-emulator.py DEV_A DEV_B NETNS_B DELAY_MS JITTER_MS LOSS SEED MAX_SECONDS
"""

import heapq
import itertools
import json
import fcntl
import os
import random
import select
import signal
import struct
import subprocess
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
# Queue bound per direction, as netem's default `limit 1000`.
LIMIT = 1000


def open_tun(name):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH22x", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def main():
    dev_a, dev_b, netns_b, delay_ms, jitter_ms, loss, seed, max_seconds = sys.argv[1:9]
    delay = int(delay_ms) / 1000.0
    jitter = int(jitter_ms) / 1000.0
    loss = float(loss)
    rng = random.Random(int(seed))
    deadline = time.monotonic() + float(max_seconds)

    fd_a = open_tun(dev_a)
    fd_b = open_tun(dev_b)
    subprocess.run(["ip", "link", "set", dev_b, "netns", netns_b], check=True)

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    # Per source device: a heap of (due, sequence, packet) for the peer
    # device. `overflow` counts packets dropped because the queue was full or
    # the peer device refused them.
    queues = {fd_a: [], fd_b: []}
    sequence = itertools.count()
    peer = {fd_a: fd_b, fd_b: fd_a}
    name = {fd_a: f"{dev_a}->{dev_b}", fd_b: f"{dev_b}->{dev_a}"}
    stats = {fd: {"sent": 0, "lost": 0, "overflow": 0} for fd in queues}

    print("ready", flush=True)
    stdin = sys.stdin.fileno()
    while not stop and time.monotonic() < deadline:
        now = time.monotonic()
        dues = [q[0][0] for q in queues.values() if q]
        timeout = max(0.0, min(dues) - now) if dues else 0.5
        try:
            readable, _, _ = select.select([fd_a, fd_b, stdin], [], [], min(timeout, 0.5))
        except InterruptedError:
            continue
        if stdin in readable and not os.read(stdin, 4096):
            break
        now = time.monotonic()
        for fd in (fd_a, fd_b):
            if fd not in readable:
                continue
            for _ in range(64):
                try:
                    packet = os.read(fd, 65536)
                except BlockingIOError:
                    break
                except OSError:
                    # The device is gone (its namespace was deleted).
                    stop.append(True)
                    break
                if rng.random() < loss:
                    stats[fd]["lost"] += 1
                elif len(queues[fd]) >= LIMIT:
                    stats[fd]["overflow"] += 1
                else:
                    due = now + max(0.0, delay + rng.uniform(-jitter, jitter))
                    heapq.heappush(queues[fd], (due, next(sequence), packet))
        now = time.monotonic()
        for fd, q in queues.items():
            while q and q[0][0] <= now:
                _, _, packet = heapq.heappop(q)
                try:
                    os.write(peer[fd], packet)
                    stats[fd]["sent"] += 1
                except OSError:
                    stats[fd]["overflow"] += 1

    for fd in (fd_a, fd_b):
        print(json.dumps({"direction": name[fd], **stats[fd]}), file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
