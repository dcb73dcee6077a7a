#!/usr/bin/env python3
"""SP 800-90B 3.1.5.2's conditioned sequential dataset for randd's conditioning: the pool's
accumulator chain (daemon/pool.c), acc = BLAKE2b-512(acc || time || "jitter\\0" || 512 raw
bytes), run over a raw capture (reused in turn until enough outputs), and the 64-byte
accumulator written after every absorb. 15,625 outputs make 1,000,000 bytes: a million 8-bit
samples (SP 800-90B 3.1.1's size), 8,000,000 bits for the bitstring track.
Usage: conditioned-dataset.py RAW OUT [OUTPUTS]; then
randctl assess --conditioning --non-vetted 8968 512 512 H_IN --conditioned-file OUT."""
import hashlib
import struct
import sys

raw = open(sys.argv[1], "rb").read()
outputs = int(sys.argv[3]) if len(sys.argv) > 3 else 15625
batches = [raw[i:i + 512] for i in range(0, len(raw) - 511, 512)]
acc, now = bytes(64), 10**9
with open(sys.argv[2], "wb") as out:
    for i in range(outputs):
        now += 1000003          # a batch about every millisecond, as a harvest gives them
        batch = batches[i % len(batches)]
        acc = hashlib.blake2b(acc + struct.pack("<Q", now) + b"jitter\0" + batch,
                              digest_size=64).digest()
        out.write(acc)
