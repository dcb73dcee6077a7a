#!/usr/bin/env python3
"""Counts pixels in a PNG screenshot, for test_report.sh: no image library, only zlib.

png_pixels.py FILE [TOP_ROWS] prints three numbers: the pixels that differ from the
background (the top-left pixel), the pixels of the verdict's pass colour (#1a7f37) and of its
fail colour (#cf222e), the last two counted in the first TOP_ROWS rows (default all)."""
import struct
import sys
import zlib


def rows(path):
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
    raw, stride, prev, out = zlib.decompress(idat), width * bpp, bytearray(width * bpp), []
    for y in range(height):
        row_at = y * (stride + 1)
        f, line = raw[row_at], bytearray(raw[row_at + 1:row_at + 1 + stride])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                nearest = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + nearest) & 255
        out.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return out


def main():
    image = rows(sys.argv[1])
    top = int(sys.argv[2]) if len(sys.argv) > 2 else len(image)
    background = image[0][0]
    differ = sum(p != background for row in image for p in row)
    green = sum(p == (0x1a, 0x7f, 0x37) for row in image[:top] for p in row)
    red = sum(p == (0xcf, 0x22, 0x2e) for row in image[:top] for p in row)
    print(differ, green, red)


main()
