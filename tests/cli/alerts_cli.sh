#!/bin/sh
# `tailguard alerts` on a store made by `tailguard serve`: silences are added, listed and expired;
# every bad argument is refused with a message and exit code 2; a missing store is named.
# Usage: alerts_cli.sh TAILGUARD WORKDIR
set -u
tailguard=$1
dir=$2
rm -rf "$dir"
mkdir -p "$dir"
. "$(dirname "$0")/lib.sh"

expect 2 "no event store at $dir/none.db" "$tailguard" alerts --db "$dir/none.db" list

# A store as the gateway leaves it.
cat >"$dir/gateway.yaml" <<YAML
listen: 127.0.0.1:0
store: {path: events.db}
routes:
  - prefix: /
    upstream: 127.0.0.1:9
YAML
"$tailguard" serve --config "$dir/gateway.yaml" >"$dir/serve.log" 2>&1 &
pid=$!
i=0
until grep -q 'listening on' "$dir/serve.log"; do
  i=$((i + 1)); [ "$i" -le 300 ] || fail "serve did not start: $(cat "$dir/serve.log")"; sleep 0.1
done
# A second gateway on the same store is refused, naming the first (regression, issue 16: two
# gateways could share a store and deliver every notification twice); the CLI may still read it.
out=$("$tailguard" serve --config "$dir/gateway.yaml" 2>&1); rc=$?
[ "$rc" -ne 0 ] || fail "a second gateway on the same store started"
printf '%s\n' "$out" | grep -q "is in use by another tailguard serve (pid $pid)" ||
  fail "the second gateway's refusal does not name the first: $out"
expect 0 "no active alerts" "$tailguard" alerts --db "$dir/events.db" list
kill -TERM "$pid"; wait "$pid" || fail "serve exited with $?"
[ -f "$dir/events.db" ] || fail "serve made no store at store.path"

db="--db $dir/events.db"
expect 0 "no active alerts" "$tailguard" alerts $db list
expect 0 "no alerts" "$tailguard" alerts --config "$dir/gateway.yaml" list --all
expect 0 '^\[\]$' "$tailguard" alerts $db list --json
expect 0 "outbox: 0 pending, 0 delivered" "$tailguard" alerts $db outbox
expect 2 "alert 42" "$tailguard" alerts $db show 42
expect 2 "alert 42" "$tailguard" alerts $db ack 42 --by me
expect 2 "alert 42" "$tailguard" alerts $db archive 42
# Ids in plain words (regression, issue 16: "Could not convert: id = abc").
expect 2 'id: expected an id, a whole number above 0 like 12 (the ID column of the list), got "abc"' \
  "$tailguard" alerts $db show abc
expect 2 'got "0"' "$tailguard" alerts $db ack 0 --by me
expect 2 'got "1x"' "$tailguard" alerts $db silence expire 1x
# A file that is not a store, in words (regression: 'prepare "PRAGMA ...": file is not a
# database').
printf 'not a database at all, just text %.0s' 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 >"$dir/junk.db"
expect 1 "is not a tailguard store (not an SQLite database): check the path" \
  "$tailguard" alerts --db "$dir/junk.db" list
expect 2 "--state: expected pending, delivered, failed or skipped" "$tailguard" alerts $db outbox --state lost

expect 0 'silence 1: {model="rank"} until' \
  "$tailguard" alerts $db silence add --match '{model="rank"}' --duration 2h --comment deploy --by ops
expect 0 'ops .*{model="rank"} .*deploy' "$tailguard" alerts $db silence list
expect 0 '"active": true' "$tailguard" alerts $db silence list --json
expect 2 "--comment is required" "$tailguard" alerts $db silence add --match '{model="x"}'
expect 2 "--duration: expected a positive duration" \
  "$tailguard" alerts $db silence add --match '{model="x"}' --duration soon --comment c
expect 2 "matcher" "$tailguard" alerts $db silence add --match '{}' --comment c
expect 2 "model=" "$tailguard" alerts $db silence add --match '{model=rank}' --comment c
expect 2 "regex\|regular" "$tailguard" alerts $db silence add --match '{model=~"(("}' --comment c
expect 0 "silence 1 expired" "$tailguard" alerts $db silence expire 1
expect 2 "expired" "$tailguard" alerts $db silence expire 1
expect 0 "no silences" "$tailguard" alerts $db silence list
expect 0 "deploy" "$tailguard" alerts $db silence list --all
expect 2 "silence 9" "$tailguard" alerts $db silence expire 9
echo "alerts cli: ok"
