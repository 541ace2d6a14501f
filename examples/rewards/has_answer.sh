#!/bin/sh
# The smallest external reward for gtpo (protocol: docs/rewards.md), in awk: 1 when the completion has a
# "####" answer line, else 0. One JSON request per input line, one {"id": ..., "reward": ...} per output line
# (the id echoed from the request), flushed. gtpo writes JSON with its keys in alphabetical order, so the
# completion is the first "completion" field and the request's id the first top-level "id" after "group".
# mawk (Debian's default awk) reads a pipe in blocks unless told to be interactive; gawk reads by line.
interactive=""
if awk -W version 2>&1 | grep -q mawk; then interactive="-W interactive"; fi
exec awk $interactive '{
  r = 0
  if (match($0, /"completion":"([^"\\]|\\.)*"/)) {
    c = substr($0, RSTART, RLENGTH)
    if (index(c, "####") > 0) r = 1
  }
  id = ""
  if (match($0, /"group":[0-9]+,"id":[0-9]+/)) {
    id = substr($0, RSTART, RLENGTH)
    sub(/.*"id":/, "", id)
  }
  printf "{\"id\": %s, \"reward\": %d}\n", id, r
  fflush()
}'
