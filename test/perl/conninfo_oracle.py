#!/usr/bin/python3
# Copyright (c) 2026, dlsm developers
#
# libpq's own reading of connection strings, the oracle of
# test/t/067_router_conninfo.pl: argv[1] is the libpq to load (ctypes, no
# build).  Each line of stdin is a JSON string; each line of stdout is
# {"ok": true, "options": {keyword: hex of its value}} as PQconninfoParse
# stores them, or {"ok": false, "error": libpq's message}.  With argv[2]
# "keywords", it prints PQlibVersion() and then each keyword PQconndefaults()
# knows with its display character ("*" for a secret), one a line.
import ctypes
import json
import sys


class Option(ctypes.Structure):
    _fields_ = [("keyword", ctypes.c_char_p), ("envvar", ctypes.c_char_p),
                ("compiled", ctypes.c_char_p), ("val", ctypes.c_char_p),
                ("label", ctypes.c_char_p), ("dispchar", ctypes.c_char_p),
                ("dispsize", ctypes.c_int)]


libpq = ctypes.CDLL(sys.argv[1])
libpq.PQconninfoParse.restype = ctypes.POINTER(Option)
libpq.PQconninfoParse.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
libpq.PQconndefaults.restype = ctypes.POINTER(Option)
libpq.PQconninfoFree.argtypes = [ctypes.POINTER(Option)]
libpq.PQfreemem.argtypes = [ctypes.c_void_p]
if len(sys.argv) > 2 and sys.argv[2] == "keywords":
    print(libpq.PQlibVersion())
    o = libpq.PQconndefaults()
    i = 0
    while o[i].keyword:
        print(o[i].keyword.decode(), o[i].dispchar.decode() or "-")
        i += 1
    sys.exit(0)
for line in sys.stdin:
    s = json.loads(line).encode("utf-8")
    err = ctypes.c_void_p()
    o = libpq.PQconninfoParse(s, ctypes.byref(err))
    if not o:
        msg = ctypes.string_at(err.value).decode("utf-8", "replace") if err.value else "out of memory"
        libpq.PQfreemem(err)
        print(json.dumps({"ok": False, "error": msg.strip()}))
        continue
    opts = {}
    i = 0
    while o[i].keyword:
        if o[i].val is not None:
            opts[o[i].keyword.decode()] = o[i].val.hex()
        i += 1
    libpq.PQconninfoFree(o)
    print(json.dumps({"ok": True, "options": opts}, sort_keys=True))
