#!/usr/bin/env python3
"""Writes a macOS .icns icon from a 256x256 PNG: the container is a header
('icns', total length) then entries (type, length, data); type 'ic08' holds
a 256x256 PNG as it is. Usage: icns.py IN.png OUT.icns"""
import struct
import sys

png = open(sys.argv[1], "rb").read()
if png[:8] != b"\x89PNG\r\n\x1a\n" or struct.unpack(">II", png[16:24]) != (256, 256):
    sys.exit(f"icns.py: {sys.argv[1]} is not a 256x256 PNG")
entry = b"ic08" + struct.pack(">I", 8 + len(png)) + png
open(sys.argv[2], "wb").write(b"icns" + struct.pack(">I", 8 + len(entry)) + entry)
