#!/usr/bin/env python3
"""A test image for `mkbench quantize` (tests/device.sh stage quantize): no downloaded photos.

    make_quantize_image.py OUT.png WIDTH HEIGHT [--channels 3|4] [--seed S]

Red grows left to right, green top to bottom, blue in rings; a disc and a bar of flat colours;
noise of +-10 a channel (so no K <= 256 reproduces it and no cluster of a k-means++ palette
stays empty for long). Written with numpy and the standard library's zlib (8-bit PNG).
"""
import argparse
import struct
import zlib

import numpy as np


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("width", type=int)
    parser.add_argument("height", type=int)
    parser.add_argument("--channels", type=int, default=3, choices=(3, 4))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    w, h = args.width, args.height
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    rgb = np.empty((h, w, 3), np.float32)
    rgb[..., 0] = 255 * x / max(w - 1, 1)
    rgb[..., 1] = 255 * y / max(h - 1, 1)
    rgb[..., 2] = 128 + 100 * np.sin(np.hypot(x - w / 2, y - h / 2) / (0.05 * max(w, h)))
    disc = (x - w / 3) ** 2 + (y - h / 2) ** 2 < (h / 4) ** 2
    rgb[disc] = (200, 40, 60)
    bar = (x > 2 * w / 3) & (y > h / 5) & (y < 2 * h / 5)
    rgb[bar] = (20, 180, 90)
    rng = np.random.default_rng(args.seed)
    rgb += rng.integers(-10, 11, size=rgb.shape)
    pixels = np.clip(rgb, 0, 255).astype(np.uint8)
    if args.channels == 4:
        alpha = ((x * 7 + y * 3) % 256).astype(np.uint8)[..., None]
        pixels = np.concatenate([pixels, alpha], axis=2)
    rows = np.concatenate([np.zeros((h, 1), np.uint8), pixels.reshape(h, -1)], axis=1)
    colour_type = 2 if args.channels == 3 else 6
    header = struct.pack(">IIBBBBB", w, h, 8, colour_type, 0, 0, 0)
    with open(args.out, "wb") as out:
        out.write(b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", header) +
                  png_chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + png_chunk(b"IEND", b""))


if __name__ == "__main__":
    main()
