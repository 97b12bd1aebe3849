#!/usr/bin/env bash
# Records SpoolUpgradeIT's fixture: a node of the release before the shared layout (built from commit
# 11d770d) on its own Redis at 127.0.0.1:6491, HTTP on 18080, makes this state; then
#   python3 dump.py 6491 > spool-0.11.jsonl
set -e
H=localhost:18080
put() { curl -sf -X PUT -H 'content-type: application/json' $H/v1/admin/consumers/$1 -d "$2" >/dev/null; }
post() { curl -sf -H 'content-type: application/json' $H$1 -d "$2"; }
put billing '{"topics":["upgrade/orders"],"ackTimeoutMs":5000,"maxPollRecords":3}'
put audit '{"topics":["upgrade/orders"],"ordering":"key","ackTimeoutMs":5000,"maxPollRecords":1}'
put failing '{"topics":["upgrade/failing"],"redelivery":{"maxDeliveries":1},"maxPollRecords":10}'
# eight orders to billing and audit: o-1..o-8, keys k1/k2
for i in 1 2 3 4 5 6 7 8; do k=k$(( i % 2 + 1 )); post /v1/topics/upgrade/orders/events "{\"events\":[{\"key\":\"$k\",\"payload\":{\"orderId\":\"o-$i\"}}]}" >/dev/null; done
# one with an idempotencyKey and a delayed one
post /v1/topics/upgrade/orders/events '{"events":[{"key":"k1","idempotencyKey":"order-9","payload":{"orderId":"o-9"}}]}' >/dev/null
post /v1/topics/upgrade/orders/events '{"events":[{"payload":{"orderId":"o-10"},"delayMs":3600000}]}' >/dev/null
# billing: o-1..o-3 handed out, o-1 acked: o-2, o-3 out (their deadline passes), the rest waiting
b=$(post /v1/consumers/billing/poll '{"maxEvents":3}')
echo "$b" | jq -c '[.events[].payload.orderId]'
a1=$(echo "$b" | jq -r '.events[0].ackId')
post /v1/consumers/billing/acks "{\"ackIds\":[\"$a1\"]}" >/dev/null
# audit (ordering by key): o-1 handed out holds k2, others wait behind their keys
post /v1/consumers/audit/poll '{"maxEvents":1}' | jq -c '[.events[].payload.orderId]'
# failing: f-1 dead-lettered (nacked past maxDeliveries 1), f-2 rejected to the error queue, f-3 waiting
for f in 1 2 3; do post /v1/topics/upgrade/failing/events "{\"events\":[{\"payload\":{\"n\":\"f-$f\"}}]}" >/dev/null; done
fb=$(post /v1/consumers/failing/poll '{"maxEvents":2}')
echo "$fb" | jq -c '[.events[].payload.n]'
post /v1/consumers/failing/nacks "{\"ackIds\":[\"$(echo "$fb" | jq -r '.events[0].ackId')\"],\"action\":\"REQUEUE\",\"reason\":\"bad\"}"; echo
post /v1/consumers/failing/nacks "{\"ackIds\":[\"$(echo "$fb" | jq -r '.events[1].ackId')\"],\"action\":\"REJECT\",\"reason\":\"worse\"}"; echo
for c in billing audit failing; do curl -s $H/v1/consumers/$c/metadata | jq -c '{backlog,unacked,deadLetters,errors,delayed}'; done
