# Runs inside gdb (see check-guest): compares the live guest with guest_layout.json.
import json
import os

import gdb

layout = json.load(open(os.environ["TOOLHOST_GUEST_LAYOUT"]))
check_high = os.environ.get("TOOLHOST_GUEST_HIGHMEM") == "yes"
inferior = gdb.selected_inferior()
failures = []


def num(text):
    return int(text, 16)


def expect(what, actual, wanted):
    if actual != wanted:
        failures.append(f"{what}: got {actual!r}, expected {wanted!r}")


def pattern_bytes(p):
    data = bytearray(((k * p["mul"] + p["add"]) & 0xFF) for k in range(p["len"]))
    data[0:16] = p["signature"].encode()
    return bytes(data)


def register(name):
    return int(gdb.parse_and_eval("$" + name)) & 0xFFFFFFFFFFFFFFFF


def set_physical(on):
    gdb.execute("maintenance packet Qqemu.PhyMemMode:%d" % (1 if on else 0), to_string=True)


patterns = [p for p in layout["patterns"] if check_high or not p.get("needs_ram_above_4g")]
if check_high:
    patterns = [p for p in patterns if p.get("needs_ram_above_4g")]

for p in patterns:
    wanted = pattern_bytes(p)
    expect(p["name"] + " by virtual address", bytes(inferior.read_memory(num(p["va"]), p["len"])), wanted)

set_physical(True)
for p in patterns:
    wanted = pattern_bytes(p)
    offset = 0
    for page in p["pages"]:
        chunk = min(0x1000 - (num(page["va"]) & 0xFFF), p["len"] - offset) if len(p["pages"]) > 1 else p["len"]
        got = bytes(inferior.read_memory(num(page["pa"]), chunk))
        expect("%s by physical address %s" % (p["name"], page["pa"]), got, wanted[offset:offset + chunk])
        offset += chunk
ready = int.from_bytes(bytes(inferior.read_memory(num(layout["ready"]), 8)), "little")
expect("ready word", hex(ready), hex(num(layout["ready_magic"])))
counter_before = int.from_bytes(bytes(inferior.read_memory(num(layout["counter"]), 8)), "little")
set_physical(False)

expect("cr3", hex(register("cr3") & ~0xFFF), hex(num(layout["cr3"])))
for name, value in layout["registers"].items():
    expect(name, hex(register(name)), hex(num(value)))
expect("tick function starts with push %rbp", bytes(inferior.read_memory(num(layout["tick_function"]), 1)), b"\x55")
unmapped_ok = False
try:
    inferior.read_memory(num(layout["unmapped_va"]), 8)
except gdb.MemoryError:
    unmapped_ok = True
expect("unmapped VA refused", unmapped_ok, True)

# The guest runs on: a breakpoint on the tick function hits and the counter moves.
gdb.execute("hbreak *%s" % layout["tick_function"], to_string=True)
gdb.execute("continue", to_string=True)
expect("stopped at the tick function", hex(register("rip")), hex(num(layout["tick_function"])))
counter_after = int.from_bytes(bytes(inferior.read_memory(num(layout["counter"]), 8)), "little")
if counter_after < counter_before:
    failures.append("the counter went backwards: %d then %d" % (counter_before, counter_after))

for f in failures:
    print("check-guest: FAIL " + f)
if not failures:
    print("check-guest: all good (%d patterns)" % len(patterns))
gdb.execute("detach", to_string=True)
