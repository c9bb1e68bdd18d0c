#!/usr/bin/env bash
# Load benchmark: crawlgate against the tools people use today, on one machine.
#
# Starts an origin (nginx serving static files), then, in front of it and with the same worker
# count: nginx as a reverse proxy with a User-Agent `map` that blocks AI crawlers, a bare pingora
# proxy (benches/load/bare_proxy.rs: the engine's floor), and crawlgate enforcing a real
# robots.txt (a small one, and a 500 KiB one). wrk drives each in alternating rounds with the
# same mix of people, allowed crawlers and blocked crawlers; the script prints requests/s,
# p50/p99 latency and the proxy process's CPU time per request (from /proc), and the ratios,
# paired per round.
#
#   benches/load.sh                     # 3 rounds of 10 s, 1 worker, 64 connections
#   ROUNDS=5 DURATION=20 WORKERS=2 CONNECTIONS=128 benches/load.sh
#   PINGORA="{threads: 1, work_stealing: false}" MIXES=forward benches/load.sh
#   MODE=h2 benches/load.sh             # HTTP/1.1 against HTTP/2 (TLS and h2c), by h2load
#
# Needs nginx and wrk (Debian: apt-get install nginx-light wrk). Everything listens on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
# MODE=h2: crawlgate alone over HTTP/1.1 and HTTP/2 side by side (benches/load/h2.sh).
if [ "${MODE:-}" = h2 ]; then exec benches/load/h2.sh; fi

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
WORKERS=${WORKERS:-1}
CONNECTIONS=${CONNECTIONS:-64}
WRK_THREADS=${WRK_THREADS:-1}
# mixed: 70% people, 20% allowed crawlers, 10% blocked crawlers; forward: no blocked crawler
# (every request reaches the origin through every proxy: the cost of deciding, alone).
MIXES=${MIXES:-mixed forward}
# RELOAD=1: after the rounds, one more crawlgate run during which its robots.txt is rewritten
# every 20 ms (by rename and in place, alternately): requests must not fail, and resident memory
# must stay flat.
RELOAD=${RELOAD:-0}
# crawlgate's pingora section, to compare settings (the bare proxy always runs pingora's defaults
# with WORKERS threads).
PINGORA=${PINGORA:-"{threads: $WORKERS}"}
# PIN_PROXY and PIN_LOAD (benches/load/common.sh): the proxy under test on a CPU of its own.
. benches/load/common.sh

for tool in nginx wrk python3; do
  command -v "$tool" >/dev/null 2>&1 || { echo "load.sh: needs $tool (apt-get install nginx-light wrk python3)" >&2; exit 1; }
done

echo "load.sh: building crawlgate and the bare pingora proxy (release)" >&2
cargo build --release --quiet --bin crawlgate --example bare_proxy

make_work load
ORIGIN=$(free_port); NGINX=$(free_port); BARE=$(free_port); SMALL=$(free_port); LARGE=$(free_port); METRICS1=$(free_port); METRICS2=$(free_port)

# --- the site: small static pages
write_pages
mkdir -p "$work/www/private"
echo "$page" > "$work/www/index.html"
echo "$page" > "$work/www/private/report.html"

# --- robots.txt: AI crawlers may fetch nothing; /private/ is off limits to every crawler.
cat > "$work/robots-small.txt" <<'EOF'
User-agent: GPTBot
User-agent: CCBot
User-agent: ClaudeBot
User-agent: Bytespider
Disallow: /

User-agent: *
Disallow: /private/
EOF
# The same rules plus 500 KiB of a real site's rules in the `*` group, so that every request
# gets the same verdict from both files and only the file's size differs.
{
  cat "$work/robots-small.txt"
  if [ -f "$LARGE_SOURCE" ]; then
    head -c 500000 "$LARGE_SOURCE" | sed -n '/^[Dd]isallow:\|^[Aa]llow:/p' | grep -v -i ' /$' | grep -v '^Disallow: *$' | grep -v -i 'blog'
  else
    for i in $(seq 1 9000); do echo "Disallow: /section-$((i % 97))/item-$i/"; done
  fi
} > "$work/robots-large.txt"
cp "$work/robots-small.txt" "$work/www/robots.txt"

# --- nginx: the origin, and the reverse proxy with a User-Agent map (what people use today)
start_origin "$ORIGIN" 'location / { try_files $uri $uri.html /index.html; }'
cat > "$work/nginx-proxy.conf" <<EOF
worker_processes $WORKERS;
pid $work/nginx-proxy.pid;
error_log $work/logs/proxy-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000;
  map \$http_user_agent \$ai_crawler {
    default 0;
    ~*(GPTBot|ChatGPT-User|OAI-SearchBot|CCBot|ClaudeBot|Claude-Web|anthropic-ai|Bytespider|PerplexityBot|Google-Extended|Amazonbot|Applebot-Extended|meta-externalagent|cohere-ai|Diffbot|YouBot|omgili|ImagesiftBot|Timpibot) 1;
  }
  upstream origin { server 127.0.0.1:$ORIGIN; keepalive 64; }
  server {
    listen 127.0.0.1:$NGINX;
    if (\$ai_crawler) { return 403; }
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
EOF
$PIN_PROXY nginx -c "$work/nginx-proxy.conf" -p "$work"

# --- the bare pingora proxy and crawlgate, with the same worker count
$PIN_PROXY target/release/examples/bare_proxy "127.0.0.1:$BARE" "127.0.0.1:$ORIGIN" "$WORKERS" 2>"$work/logs/bare.log" &
pids+=($!); BARE_PID=$!
crawlgate_config() { # listen metrics robots
  cat <<EOF
listen: ["127.0.0.1:$1"]
metrics: {listen: "127.0.0.1:$2"}
pingora: $PINGORA
sites:
  - name: bench
    upstream: "127.0.0.1:$ORIGIN"
    robots: {file: $3}
    action: block
EOF
}
crawlgate_config "$SMALL" "$METRICS1" "$work/robots-small.txt" > "$work/crawlgate-small.yaml"
crawlgate_config "$LARGE" "$METRICS2" "$work/robots-large.txt" > "$work/crawlgate-large.yaml"
RUST_LOG=warn $PIN_PROXY target/release/crawlgate serve --config "$work/crawlgate-small.yaml" 2>"$work/logs/small.log" &
pids+=($!); SMALL_PID=$!
RUST_LOG=warn $PIN_PROXY target/release/crawlgate serve --config "$work/crawlgate-large.yaml" 2>"$work/logs/large.log" &
pids+=($!); LARGE_PID=$!

for port in $ORIGIN $NGINX $BARE $SMALL $LARGE; do wait_port "$port"; done

# --- the request mixes
write_mixes

NGINX_PID=$(cat "$work/nginx-proxy.pid")
results="$work/results.tsv"
: > "$results"
run() { # round mix name port pid
  local before after out
  $PIN_LOAD wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d2s -s "$work/$2.lua" "http://127.0.0.1:$4" >/dev/null 2>&1 || true
  before=$(cpu_ticks "$5")
  out=$($PIN_LOAD wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$work/$2.lua" "http://127.0.0.1:$4")
  after=$(cpu_ticks "$5")
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$((after - before))" "$(echo "$out" | tr '\n' '|')" >> "$results"
  echo "round $1, $2 mix: $3 done" >&2
}
for round in $(seq 1 "$ROUNDS"); do
  for mix in $MIXES; do
    run "$round" "$mix" nginx "$NGINX" "$NGINX_PID"
    run "$round" "$mix" bare-pingora "$BARE" "$BARE_PID"
    run "$round" "$mix" crawlgate "$SMALL" "$SMALL_PID"
    run "$round" "$mix" crawlgate-500KiB "$LARGE" "$LARGE_PID"
  done
done

if [ "$RELOAD" = 1 ]; then
  v1=$(cat "$work/robots-small.txt"); v2="$v1"$'\nDisallow: /another/\n'
  rss_before=$(rss_kib "$SMALL_PID")
  # Bursts of ten rewrites 20 ms apart, then a pause in which the last one holds still and is
  # loaded (a file that never holds still is never read: it may be half-written).
  ( end=$((SECONDS + DURATION)); n=0
    while [ $SECONDS -lt $end ]; do
      n=$((n + 1)); if [ $(((n / 10) % 2)) = 0 ]; then text="$v2"; else text="$v1"; fi
      [ $((n % 10)) = 0 ] && sleep 0.6
      if [ $((n % 4)) -lt 2 ]; then printf '%s\n' "$text" > "$work/robots-small.txt.tmp" && mv "$work/robots-small.txt.tmp" "$work/robots-small.txt"
      else printf '%s\n' "$text" > "$work/robots-small.txt"; fi
      sleep 0.02
    done; echo "$n" > "$work/rewrites" ) &
  writer=$!
  reload_out=$($PIN_LOAD wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${DURATION}s" -s "$work/mixed.lua" "http://127.0.0.1:$SMALL")
  wait "$writer"
  sleep 1   # the last version holds still: it is loaded
  rss_after=$(rss_kib "$SMALL_PID")
  echo "reload under load: $(cat "$work/rewrites") rewrites in ${DURATION}s; RSS ${rss_before} KiB -> ${rss_after} KiB" >&2
  echo "$reload_out" | grep -E "requests in|Socket errors|Non-2xx" >&2
  curl -s "http://127.0.0.1:$METRICS1/metrics" | grep -E '^crawlgate_robots_(reloads_total|snapshots)' >&2 || true
fi

# Every blocked crawler request got a 403 from crawlgate, and nothing else failed.
curl -s "http://127.0.0.1:$METRICS1/metrics" | grep '^crawlgate_requests_total' > "$work/metrics-small.txt" || true

python3 - "$results" "$(getconf CLK_TCK)" "$work/metrics-small.txt" <<'EOF'
import re, sys
rows = []
ticks_per_s = int(sys.argv[2])
def ms(text):
    # wrk writes us, ms, s or m (minutes), and "-nan" when nothing was answered.
    found = re.match(r"([\d.]+)(us|ms|s|m)$", text)
    if not found:
        return float("nan")
    value, unit = found.groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]
for line in open(sys.argv[1]):
    rnd, mix, name, ticks, out = line.rstrip("\n").split("\t", 4)
    out = out.replace("|", "\n")
    total = int(re.search(r"(\d+) requests in", out).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    # The latency distribution's lines, not a "95.50%" in the thread statistics above them.
    p50 = ms(re.search(r"^\s*50%\s+(\S+)", out, re.M).group(1))
    p99 = ms(re.search(r"^\s*99%\s+(\S+)", out, re.M).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    non2xx = int(errors.group(1)) if errors else 0
    cpu_us = int(ticks) / ticks_per_s / total * 1e6
    rows.append(dict(round=int(rnd), mix=mix, name=name, rps=rps, p50=p50, p99=p99, cpu=cpu_us, non2xx=non2xx / total))
print(f"{'round':>5} {'mix':<8} {'proxy':<16} {'req/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'CPU µs/req':>10} {'non-2xx':>7}")
for r in rows:
    print(f"{r['round']:>5} {r['mix']:<8} {r['name']:<16} {r['rps']:>9.0f} {r['p50']:>7.2f} {r['p99']:>7.2f} {r['cpu']:>10.1f} {r['non2xx']:>7.1%}")
print()
print("CPU per request, ratios paired per round:")
print(f"{'round':>5} {'mix':<8} {'crawlgate/bare':>15} {'500KiB/bare':>12} {'crawlgate/nginx':>16} {'bare/nginx':>11}")
by = {}
for r in rows:
    by.setdefault((r["mix"], r["round"]), {})[r["name"]] = r
ratios = {}
for (mix, rnd), g in sorted(by.items()):
    cb = g["crawlgate"]["cpu"] / g["bare-pingora"]["cpu"]
    lb = g["crawlgate-500KiB"]["cpu"] / g["bare-pingora"]["cpu"]
    cn = g["crawlgate"]["cpu"] / g["nginx"]["cpu"]
    bn = g["bare-pingora"]["cpu"] / g["nginx"]["cpu"]
    ratios.setdefault(mix, []).append((cb, lb, cn, bn))
    print(f"{rnd:>5} {mix:<8} {cb:>15.2f} {lb:>12.2f} {cn:>16.2f} {bn:>11.2f}")
med = lambda xs: sorted(xs)[len(xs) // 2]
for mix, values in ratios.items():
    cols = list(zip(*values))
    print(f"{'median':>5} {mix:<8} {med(cols[0]):>15.2f} {med(cols[1]):>12.2f} {med(cols[2]):>16.2f} {med(cols[3]):>11.2f}")
print()
print("crawlgate's own count of the small-file run (blocked crawlers answered 403 by crawlgate):")
print(open(sys.argv[3]).read().strip() or "(no metrics)")
EOF
