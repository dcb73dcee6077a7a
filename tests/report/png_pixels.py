#!/usr/bin/env python3
"""Counts pixels in a PNG screenshot, for test_report.sh: no image library, only zlib.

png_pixels.py FILE [TOP_ROWS [RRGGBB...]] prints the pixels that differ from the background
(the top-left pixel); those of the verdict's pass colour (#1a7f37) and of its fail colour
(#cf222e), counted in the first TOP_ROWS rows (default all); those of the pass colour in the
whole image; then those of each RRGGBB given, in the whole image."""
import collections
import operator
import struct
import sys
import zlib


WRAP = bytes(i & 255 for i in range(512))      # a sum of two bytes, modulo 256


def rows(path):
    """Each row of the image in turn, as its red, green and blue bytes."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    pos, idat, head = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            head = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = head
    if depth != 8 or colour not in (2, 6) or interlace:
        sys.exit(f"{path}: only 8-bit RGB or RGBA, not interlaced "
                 f"(depth {depth}, type {colour})")
    bpp = 3 if colour == 2 else 4
    raw, stride, prev = zlib.decompress(idat), width * bpp, bytearray(width * bpp)
    for y in range(height):
        row_at = y * (stride + 1)
        f, line = raw[row_at], bytearray(raw[row_at + 1:row_at + 1 + stride])
        # One loop per filter (PNG spec 9.2), and Up, most of Chromium's rows, through map
        # in C: a branch per byte made this the slowest step of test_report.sh.
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            line = bytearray(map(WRAP.__getitem__, map(operator.add, line, prev)))
        elif f == 3:
            for i in range(stride):
                line[i] = (line[i] + ((line[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 255
        elif f == 4:            # Paeth; the first pixel's left and upper left are 0: up
            for i in range(bpp):
                line[i] = (line[i] + prev[i]) & 255
            for i in range(bpp, stride):
                a, b, c = line[i - bpp], prev[i], prev[i - bpp]
                pa, pb, pc = b - c, a - c, a + b - c - c      # p - a, p - b, p - c
                pa, pb, pc = -pa if pa < 0 else pa, -pb if pb < 0 else pb, -pc if pc < 0 else pc
                nearest = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + nearest) & 255
        yield line[0::bpp], line[1::bpp], line[2::bpp]
        prev = line


def main():
    top = int(sys.argv[2]) if len(sys.argv) > 2 else None
    extra = [tuple(bytes.fromhex(c)) for c in sys.argv[3:]]
    pass_colour, fail_colour = (0x1a, 0x7f, 0x37), (0xcf, 0x22, 0x2e)
    background, differ, green, red, green_all = None, 0, 0, 0, 0
    extra_counts = [0] * len(extra)
    for y, (r, g, b) in enumerate(rows(sys.argv[1])):
        counts = collections.Counter(zip(r, g, b))
        if background is None:
            background = (r[0], g[0], b[0])
        differ += len(r) - counts[background]
        green_all += counts[pass_colour]
        for i, colour in enumerate(extra):
            extra_counts[i] += counts[colour]
        if top is None or y < top:
            green += counts[pass_colour]
            red += counts[fail_colour]
    print(differ, green, red, green_all, *extra_counts)

main()
