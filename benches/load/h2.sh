#!/usr/bin/env bash
# `MODE=h2 benches/load.sh`: crawlgate over HTTP/1.1 and HTTP/2 side by side.
#
# One crawlgate in front of an nginx origin, with a plain listener (h2c on) and a TLS listener
# (h2 and http/1.1 by ALPN). h2load (one tool for both protocols, so the comparison is fair)
# drives, in alternating rounds: HTTP/1.1 and h2c on the plain listener, HTTP/1.1 and HTTP/2 over
# TLS with one request in flight per connection, and HTTP/2 over TLS with STREAMS requests in
# flight on each of CONNECTIONS/STREAMS connections (as browsers and Googlebot use it: the same
# concurrency over fewer connections). Two mixes: people (forwarded to the origin) and a blocked
# crawler (answered by crawlgate). Prints requests/s, p50 and p99 (from h2load's per-request
# log) and crawlgate's CPU time per request, with medians over the rounds.
#
#   MODE=h2 benches/load.sh                            # 3 rounds of 10 s, 1 thread, 64 connections
#   MODE=h2 ROUNDS=5 DURATION=20 WORKERS=2 benches/load.sh
#
# Needs nginx, h2load (Debian: nghttp2-client, installed here when missing and apt-get can),
# openssl and python3. Everything listens on loopback.
set -euo pipefail
cd "$(dirname "$0")/../.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
WORKERS=${WORKERS:-1}
CONNECTIONS=${CONNECTIONS:-64}
STREAMS=${STREAMS:-8}
MIXES=${MIXES:-people blocked}
PINGORA=${PINGORA:-"{threads: $WORKERS}"}
. benches/load/common.sh

if ! command -v h2load >/dev/null 2>&1; then
  echo "h2.sh: h2load is missing; installing nghttp2-client" >&2
  if [ "$(id -u)" = 0 ]; then apt-get install -y nghttp2-client >&2; else sudo apt-get install -y nghttp2-client >&2; fi
fi
for tool in nginx h2load openssl python3; do
  command -v "$tool" >/dev/null 2>&1 || { echo "h2.sh: needs $tool (apt-get install nginx-light nghttp2-client openssl python3)" >&2; exit 1; }
done

echo "h2.sh: building crawlgate (release)" >&2
cargo build --release --quiet --bin crawlgate

make_work h2
ORIGIN=$(free_port); PLAIN=$(free_port); TLS=$(free_port); METRICS=$(free_port)

write_pages
printf 'User-agent: GPTBot\nDisallow: /\n\nUser-agent: *\nDisallow: /private/\n' > "$work/robots.txt"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -subj /CN=bench.test -addext subjectAltName=DNS:bench.test \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null

start_origin "$ORIGIN"

cat > "$work/crawlgate.yaml" <<EOF
listen: ["127.0.0.1:$PLAIN"]
h2c: true
tls_listen: [{addr: "127.0.0.1:$TLS", cert: $work/cert.pem, key: $work/key.pem}]
metrics: {listen: "127.0.0.1:$METRICS"}
pingora: $PINGORA
sites:
  - name: bench
    upstream: "127.0.0.1:$ORIGIN"
    robots: {file: $work/robots.txt}
    action: block
EOF
RUST_LOG=warn $PIN_PROXY target/release/crawlgate serve --config "$work/crawlgate.yaml" 2>"$work/logs/crawlgate.log" &
pids+=($!); PROXY_PID=$!
for port in $ORIGIN $PLAIN $TLS $METRICS; do wait_port "$port"; done

user_agent() { # mix
  case "$1" in
    people) echo "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0" ;;
    blocked) echo "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)" ;;
  esac
}

results="$work/results.tsv"
: > "$results"
run() { # round mix name scheme port connections streams [h2load flags...]
  local round=$1 mix=$2 name=$3 scheme=$4 port=$5 conns=$6 streams=$7; shift 7
  local ua uris=() before after out log="$work/log-$round-$mix-${name//[^a-z0-9]/_}.tsv"
  ua=$(user_agent "$mix")
  for i in $(seq 1 50); do uris+=("$scheme://127.0.0.1:$port/blog/post-$i.html"); done
  before=$(cpu_ticks "$PROXY_PID")
  out=$($PIN_LOAD h2load "$@" -t1 -c"$conns" -m"$streams" -D"$DURATION" --warm-up-time=1 \
    -H "user-agent: $ua" --log-file="$log" "${uris[@]}" 2>&1) || { echo "h2load failed: $out" >&2; exit 1; }
  after=$(cpu_ticks "$PROXY_PID")
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$mix" "$name" "$((after - before))" "$log" "$(echo "$out" | tr '\n' '|')" >> "$results"
  echo "round $round, $mix: $name done" >&2
}
half=$((CONNECTIONS / STREAMS)); [ "$half" -ge 1 ] || half=1
for round in $(seq 1 "$ROUNDS"); do
  for mix in $MIXES; do
    run "$round" "$mix" "http/1.1" http "$PLAIN" "$CONNECTIONS" 1 --h1
    run "$round" "$mix" "h2c" http "$PLAIN" "$CONNECTIONS" 1
    run "$round" "$mix" "http/1.1+tls" https "$TLS" "$CONNECTIONS" 1 --h1
    run "$round" "$mix" "h2+tls" https "$TLS" "$CONNECTIONS" 1
    run "$round" "$mix" "h2+tls x$STREAMS" https "$TLS" "$half" "$STREAMS"
  done
done

python3 - "$results" "$(getconf CLK_TCK)" <<'EOF'
import re, sys
ticks_per_s = int(sys.argv[2])
rows = []
for line in open(sys.argv[1]):
    rnd, mix, name, ticks, log, out = line.rstrip("\n").split("\t", 5)
    out = out.replace("|", "\n")
    rps = float(re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out).group(1))
    # h2load counts a 4xx as "failed"; a request that got no answer is "errored" or "timeout".
    done = re.search(r"requests: \d+ total, \d+ started, (\d+) done, \d+ succeeded, \d+ failed, (\d+) errored, (\d+) timeout", out)
    completed, errored, timeout = int(done.group(1)), int(done.group(2)), int(done.group(3))
    codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
    micros = sorted(int(l.split("\t")[2]) for l in open(log) if l.count("\t") >= 2)
    at = lambda q: micros[min(len(micros) - 1, int(q * len(micros)))] / 1000 if micros else float("nan")
    cpu = int(ticks) / ticks_per_s / max(completed, 1) * 1e6
    rows.append(dict(round=int(rnd), mix=mix, name=name, rps=rps, p50=at(0.50), p99=at(0.99),
                     cpu=cpu, failed=errored + timeout, c2xx=int(codes.group(1)), c4xx=int(codes.group(3))))
print(f"{'round':>5} {'mix':<8} {'protocol':<14} {'req/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'CPU µs/req':>10} {'2xx':>8} {'4xx':>8} {'no answer':>9}")
for r in rows:
    print(f"{r['round']:>5} {r['mix']:<8} {r['name']:<14} {r['rps']:>9.0f} {r['p50']:>7.2f} {r['p99']:>7.2f} {r['cpu']:>10.1f} {r['c2xx']:>8} {r['c4xx']:>8} {r['failed']:>9}")
print()
print("medians over the rounds (worst p99 of any round beside it):")
print(f"{'mix':<8} {'protocol':<14} {'req/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'worst p99':>9} {'CPU µs/req':>10}")
groups = {}
for r in rows:
    groups.setdefault((r["mix"], r["name"]), []).append(r)
med = lambda xs: sorted(xs)[len(xs) // 2]
for (mix, name), rs in groups.items():
    print(f"{mix:<8} {name:<14} {med([r['rps'] for r in rs]):>9.0f} {med([r['p50'] for r in rs]):>7.2f} "
          f"{med([r['p99'] for r in rs]):>7.2f} {max(r['p99'] for r in rs):>9.2f} {med([r['cpu'] for r in rs]):>10.1f}")
EOF
echo
echo "crawlgate's count (blocked crawlers answered 403 by crawlgate, over every protocol):"
curl -s "http://127.0.0.1:$METRICS/metrics" | grep '^crawlgate_requests_total' || echo "(no metrics)"
