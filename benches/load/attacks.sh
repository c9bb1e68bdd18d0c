#!/usr/bin/env bash
# What people get while a client tries to starve crawlgate: for each attack, crawlgate (release)
# starts in front of an nginx origin with the descriptor limit of this shell, the attack runs
# for HOLD seconds, and a person's client (a new connection from its own loopback address every
# 50 ms, a browser's User-Agent, 5 s to be answered) asks all along. Prints, per attack, the
# descriptors and resident memory of crawlgate at rest and at the attack's height, and the
# person's answered share, p50, p99 and slowest answer.
#
#   benches/load/attacks.sh                          # ATTACKS="trickle-one idle-one trickle-many"
#   CRAWLGATE=/path/to/older/crawlgate benches/load/attacks.sh    # the same attacks on another build
#
# The attacks (every connection stays open until the end of HOLD, or until crawlgate closes it):
#   trickle-one   2 x 9,990 connections from 127.0.0.1, each sending a request header one byte
#                 a second (slowloris; the attack that exhausted descriptors before the guard)
#   idle-one      3,000 keep-alive connections from 127.0.0.1 that were answered once and idle
#   trickle-many  8,000 trickling connections from 16 addresses (127.0.1.1-16), 500 each: under
#                 the per-address cap, under max_connections
#
# The reverse-DNS flood is measured by tests/bounded_lookups.rs and its decision record
# (docs/decisions/verification-bounds.md). Needs python3 and nginx; loopback only.
set -euo pipefail
cd "$(dirname "$0")/../.."
. benches/load/common.sh
HOLD=${HOLD:-20}
ATTACKS=${ATTACKS:-"trickle-one idle-one trickle-many"}
CRAWLGATE=${CRAWLGATE:-target/release/crawlgate}
ulimit -n "$(ulimit -Hn)"
[ "$CRAWLGATE" = target/release/crawlgate ] && cargo build --release --quiet --bin crawlgate

make_work attacks
write_pages
ORIGIN=$(free_port)
start_origin "$ORIGIN"
wait_port "$ORIGIN"

# One attacking process: COUNT connections spread over ADDRESSES (comma-separated), of KIND
# trickle or idle, held HOLD seconds. Connections that cannot be opened are not retried.
attack() { # kind port count addresses
  python3 - "$1" "$2" "$3" "$4" "$HOLD" <<'EOF'
import asyncio, sys
kind, port, count, addresses, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(","), float(sys.argv[5])
HEADER = b"GET /blog/post-1.html HTTP/1.1\r\nHost: localhost\r\nUser-Agent: Mozilla/5.0 Firefox/128.0\r\n"
async def one(i, deadline):
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, local_addr=(addresses[i % len(addresses)], 0)), 5)
    except Exception:
        return
    try:
        if kind == "idle":
            writer.write(HEADER + b"\r\n")
            await asyncio.wait_for(reader.readuntil(b"</html>\n"), 10)
            await asyncio.wait_for(reader.read(1), max(0.1, deadline - asyncio.get_running_loop().time()))
        else:
            for byte in HEADER:
                if asyncio.get_running_loop().time() > deadline or reader.at_eof():
                    break
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(1)
    except Exception:
        pass
    finally:
        writer.close()
async def main():
    deadline = asyncio.get_running_loop().time() + hold
    tasks = []
    for i in range(count):
        tasks.append(asyncio.create_task(one(i, deadline)))
        if i % 200 == 199:
            await asyncio.sleep(0.02)   # a storm, not one burst the backlog drops
    await asyncio.gather(*tasks)
asyncio.run(main())
EOF
}

# The person: a new connection every 50 ms for SECONDS; prints "answered total p50 p99 max" (ms).
person() { # port seconds
  python3 - "$1" "$2" <<'EOF'
import socket, sys, time
port, seconds = int(sys.argv[1]), float(sys.argv[2])
request = b"GET /blog/post-2.html HTTP/1.1\r\nHost: localhost\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\nConnection: close\r\n\r\n"
times, total, end = [], 0, time.monotonic() + seconds
while time.monotonic() < end:
    total += 1
    start = time.monotonic()
    try:
        s = socket.socket(); s.settimeout(5); s.bind(("127.0.0.200", 0)); s.connect(("127.0.0.1", port))
        s.sendall(request)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk: break
            data += chunk
        s.close()
        if data.startswith(b"HTTP/1.1 200"):
            times.append((time.monotonic() - start) * 1000)
    except OSError:
        pass
    time.sleep(max(0, 0.05 - (time.monotonic() - start)))
times.sort()
pick = lambda q: f"{times[min(len(times) - 1, int(q * len(times)))]:.1f}" if times else "-"
print(len(times), total, pick(0.5), pick(0.99), f"{times[-1]:.1f}" if times else "-")
EOF
}

descriptors() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }

rows=()
for name in $ATTACKS; do
  port=$(free_port) metrics=$(free_port)
  cat > "$work/c.yaml" <<EOF
listen: ["127.0.0.1:$port"]
metrics: {listen: "127.0.0.1:$metrics"}
pingora: {threads: 2}
sites:
  - name: s
    upstream: "127.0.0.1:$ORIGIN"
    robots: {inline: "User-agent: *\nDisallow: /private/\n"}
EOF
  RUST_LOG=error "$CRAWLGATE" serve --config "$work/c.yaml" 2>>"$work/crawlgate.log" &
  pid=$!
  pids+=("$pid")
  wait_port "$port"
  sleep 1
  rest_fd=$(descriptors "$pid") rest_rss=$(rss_kib "$pid")
  attackers=()
  case $name in
    trickle-one) attack trickle "$port" 9990 127.0.0.1 & attackers+=("$!")
                 attack trickle "$port" 9990 127.0.0.1 & attackers+=("$!") ;;
    idle-one)    attack idle "$port" 3000 127.0.0.1 & attackers+=("$!") ;;
    trickle-many) addresses=$(seq -s, -f '127.0.1.%g' 1 16)
                 attack trickle "$port" 4000 "$addresses" & attackers+=("$!")
                 attack trickle "$port" 4000 "$addresses" & attackers+=("$!") ;;
    *) echo "unknown attack $name" >&2; exit 1 ;;
  esac
  # The person asks from the attack's start to its end; the peak is sampled each second.
  person "$port" "$HOLD" > "$work/person" & asker=$!
  peak_fd=0 peak_rss=0
  for _ in $(seq 1 "$HOLD"); do
    sleep 1
    fd=$(descriptors "$pid") rss=$(rss_kib "$pid")
    [ "$fd" -gt "$peak_fd" ] && peak_fd=$fd
    [ "$rss" -gt "$peak_rss" ] && peak_rss=$rss
  done
  wait "$asker" || true
  wait "${attackers[@]}" 2>/dev/null || true
  read -r answered total p50 p99 slowest < "$work/person"
  rows+=("$name $rest_fd $peak_fd $((rest_rss / 1024)) $((peak_rss / 1024)) $answered/$total $p50 $p99 $slowest")
  kill "$pid"; wait "$pid" 2>/dev/null || true
done
printf '%-13s %18s %18s %12s %10s %10s %10s\n' attack "descriptors" "RSS (MiB)" "answered" "p50 ms" "p99 ms" "max ms"
for row in "${rows[@]}"; do
  read -r name rest_fd peak_fd rest_rss peak_rss answered p50 p99 slowest <<<"$row"
  printf '%-13s %18s %18s %12s %10s %10s %10s\n' "$name" "$rest_fd -> $peak_fd" "$rest_rss -> $peak_rss" "$answered" "$p50" "$p99" "$slowest"
done
