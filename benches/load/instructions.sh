#!/usr/bin/env bash
# Instructions per request, counted by valgrind's callgrind: the repeatable twin of load.sh's CPU
# time per request (a count of instructions does not change with what else the machine is
# doing). The bare pingora proxy and crawlgate (small and 500 KiB robots.txt) each run under
# callgrind in front of the same nginx origin; after a warm-up the counters are zeroed, wrk sends
# the request mix for DURATION seconds, and the instructions executed are divided by the requests
# answered. Prints a table with the ratios, and crawlgate's most expensive functions.
#
#   benches/load/instructions.sh            # DURATION=15 MIX=mixed (or forward, people) SIZES="small large"
#   STORES="none redis" MIX=people SIZES=small benches/load/instructions.sh   # people, with and
#                                           # without a shared state store (needs redis-server)
#   REFERER=https://chatgpt.com/ MIX=people SIZES=small benches/load/instructions.sh   # people
#                                           # arriving from an operator's product (a referral)
#   ROBOTS_EXTRA=', managed: {categories: {ai-training: disallow}}' \
#   SITE_EXTRA='    pay_per_crawl: {ai-training: "USD 0.01"}' STATE_DIR=1 \
#     REFERER=https://chatgpt.com/ MIX=people SIZES=small benches/load/instructions.sh
#                                           # issue 26's three at once: a managed robots.txt,
#                                           # pay per crawl (its ledger in a state directory)
#                                           # and people with a Referer
#
# Needs valgrind, nginx and wrk. Everything listens on loopback.
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION=${DURATION:-15}
MIX=${MIX:-mixed}
# Another crawlgate binary to measure (e.g. an older build, for a before/after comparison).
CRAWLGATE=${CRAWLGATE:-target/release/crawlgate}
# crawlgate's pingora section, to compare settings.
PINGORA=${PINGORA:-"{threads: 1}"}
# Which robots.txt sizes to measure crawlgate with (the bare proxy is always measured).
SIZES=${SIZES:-"small large"}
# Which state stores to measure each size with: none (this process's memory) and/or redis (a
# redis-server or valkey-server the script starts on loopback, as `state: {redis: URL}`).
STORES=${STORES:-none}
# TIMEOUTS=1: also measure the bare proxy with crawlgate's origin read and write timeouts
# (pingora registers a timer for every read), to tell their cost apart from enforcement's.
TIMEOUTS=${TIMEOUTS:-0}
. benches/load/common.sh
for tool in valgrind callgrind_control callgrind_annotate nginx wrk python3; do
  command -v "$tool" >/dev/null 2>&1 || { echo "instructions.sh: needs $tool" >&2; exit 1; }
done
cargo build --release --quiet --bin crawlgate --example bare_proxy

make_work instructions

ORIGIN=$(free_port)
mkdir -p "$work/www/blog" "$work/logs"
for i in $(seq 1 50); do echo '<!doctype html><html><body><p>A small static page.</p></body></html>' > "$work/www/blog/post-$i.html"; done
cat > "$work/origin.conf" <<EOF
worker_processes 1;
pid $work/origin.pid;
error_log $work/logs/origin.log;
events { worker_connections 1024; }
http { access_log off; keepalive_requests 100000; server { listen 127.0.0.1:$ORIGIN; root $work/www; } }
EOF
nginx -c "$work/origin.conf" -p "$work"
printf 'User-agent: GPTBot\nUser-agent: CCBot\nDisallow: /\n\nUser-agent: *\nDisallow: /private/\n' > "$work/small.txt"
{ cat "$work/small.txt"
  if [ -f "$LARGE_SOURCE" ]; then head -c 500000 "$LARGE_SOURCE" | sed -n '/^[Dd]isallow:/p' | grep -v -i ' /$\|blog'
  else for i in $(seq 1 9000); do echo "Disallow: /section-$((i % 97))/item-$i/"; done; fi
} > "$work/large.txt"

cat > "$work/mix.lua" <<'EOF'
local people = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
local allowed = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
local blocked = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"
local blocked_share = tonumber(os.getenv("BLOCKED") or "1")
local only_people = os.getenv("MIX") == "people"
local referer = os.getenv("REFERER")
local n = 0
request = function()
  n = n + 1
  local slot = n % 10
  local ua
  if only_people or slot < 7 then ua = people elseif slot < 10 - blocked_share then ua = allowed else ua = blocked end
  local headers = { ["User-Agent"] = ua }
  if referer and ua == people then headers["Referer"] = referer end
  return wrk.format("GET", "/blog/post-" .. (n % 50 + 1) .. ".html", headers)
end
EOF
BLOCKED=1; [ "$MIX" = forward ] && BLOCKED=0
export BLOCKED MIX REFERER
STORE_URL=
if [[ " $STORES " == *" redis "* ]]; then
  store_bin=$(command -v redis-server || command -v valkey-server) \
    || { echo "instructions.sh: STORES=redis needs redis-server or valkey-server" >&2; exit 1; }
  STORE_PORT=$(free_port)
  "$store_bin" --port "$STORE_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
    >"$work/logs/store.log" 2>&1 &
  pids+=("$!")
  wait_port "$STORE_PORT"
  STORE_URL="redis://127.0.0.1:$STORE_PORT/0"
fi

measure() { # name port command...
  local name=$1 port=$2; shift 2
  local out="$work/callgrind.$name.out"
  valgrind --tool=callgrind --callgrind-out-file="$out" "$@" 2>"$work/logs/$name.log" &
  local pid=$!
  pids+=("$pid")
  wait_port "$port" 600   # valgrind starts slowly
  # Background services (reload, key directories) build their clients after the listener opens:
  # let them finish before counting, or their start-up is counted as requests' work.
  sleep "${SETTLE:-10}"
  wrk -t1 -c8 -d3s -s "$work/mix.lua" "http://127.0.0.1:$port" >/dev/null
  callgrind_control -z "$pid" >/dev/null 2>&1
  local requests
  requests=$(wrk -t1 -c8 -d"${DURATION}s" -s "$work/mix.lua" "http://127.0.0.1:$port" | awk '/requests in/ {print $1}')
  callgrind_control -d "$pid" >/dev/null 2>&1
  sleep 1
  local dump; dump=$(ls -t "$out".* 2>/dev/null | head -1)
  local ir; ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$dump")
  echo "$name $requests $ir $dump"
  kill "$pid"; wait "$pid" 2>/dev/null || true
}
config() { # port robots [store URL]
  # ROBOTS_EXTRA: more keys of the site's robots map; SITE_EXTRA: more lines of the site;
  # STATE_DIR=1: a state directory in the work folder.
  printf 'listen: ["127.0.0.1:%s"]\npingora: %s\nsites:\n  - name: bench\n    upstream: "127.0.0.1:%s"\n    robots: {file: %s%s}\n' "$1" "$PINGORA" "$ORIGIN" "$2" "${ROBOTS_EXTRA:-}"
  [ -z "${SITE_EXTRA:-}" ] || printf '%s\n' "$SITE_EXTRA"
  [ -z "${3:-}" ] || printf 'state: {redis: "%s"}\n' "$3"
  [ "${STATE_DIR:-0}" != 1 ] || { mkdir -p "$work/state"; printf 'state_dir: "%s"\n' "$work/state"; }
}
rows=()
port=$(free_port)
rows+=("$(measure bare-pingora "$port" target/release/examples/bare_proxy "127.0.0.1:$port" "127.0.0.1:$ORIGIN" 1)")
# The bare proxy telling the origin who the visitor is, as crawlgate does by default.
port=$(free_port)
rows+=("$(BARE_FORWARDING=1 measure bare-forwarding "$port" target/release/examples/bare_proxy "127.0.0.1:$port" "127.0.0.1:$ORIGIN" 1)")
if [ "$TIMEOUTS" = 1 ]; then
  port=$(free_port)
  rows+=("$(measure bare-timeouts "$port" target/release/examples/bare_proxy "127.0.0.1:$port" "127.0.0.1:$ORIGIN" 1 60)")
fi
for size in $SIZES; do
  for store in $STORES; do
    port=$(free_port)
    name="crawlgate-$size" url=
    [ "$store" = none ] || { name="crawlgate-$size-$store"; url=$STORE_URL; }
    config "$port" "$work/$size.txt" "$url" > "$work/$name.yaml"
    rows+=("$(RUST_LOG=warn measure "$name" "$port" "$CRAWLGATE" serve --config "$work/$name.yaml")")
  done
done
python3 - "$MIX" "${rows[@]}" <<'EOF'
import sys
mix, rows = sys.argv[1], [r.split() for r in sys.argv[2:]]
table = {r[0]: (int(r[1]), int(r[2].replace(",", ""))) for r in rows}
print(f"mix: {mix}")
print(f"{'proxy':<22} {'requests':>9} {'instructions/request':>21} {'ratio to bare':>14} {'to bare+fwd':>12}")
bare = table["bare-pingora"][1] / table["bare-pingora"][0]
forwarding = table["bare-forwarding"][1] / table["bare-forwarding"][0]
for name, (requests, ir) in table.items():
    per = ir / requests
    print(f"{name:<22} {requests:>9} {per:>21,.0f} {per / bare:>14.3f} {per / forwarding:>12.3f}")
EOF
small_dump=$(printf '%s\n' "${rows[@]}" | awk '$1 == "crawlgate-small" {print $4}')
echo
echo "crawlgate's own functions, inclusive, share of all instructions (small robots.txt):"
callgrind_annotate --inclusive=yes "$small_dump" 2>/dev/null | grep -E 'crawlgate::' | head -15 || true
