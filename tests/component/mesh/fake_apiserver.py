#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A local HTTPS server that answers pod and node list requests the way the Kubernetes API server
does: bearer token checked, equality label selectors and the spec.nodeName field selector
applied, pods listed per namespace or across all of them (/api/v1/pods), results paged with
limit/continue, errors as Status objects. Every request line is appended to --request-log for the test to read.
Writes, as the agent's Kubernetes signals make them: POST of an Event (409 AlreadyExists for a
name already posted) and PATCH of a node's status; each is appended as one JSON line
{method, path, content_type, body} to <request-log>.writes. With "forbid_writes": true in the
objects file, writes are answered 403 Forbidden as without RBAC.

Usage: fake_apiserver.py --cert C --key K --token-file T --objects O.json --port-file P
                         --request-log L
O.json: {"namespaces": {"ns": [pod, ...]}, "nodes": [node, ...]}
"""
import argparse
import base64
import http.server
import json
import ssl
import sys
import urllib.parse


def selector_matches(selector, labels):
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "=" in term:
            key, value = term.split("=", 1)
            if labels.get(key.rstrip("=")) != value:
                return False
        elif term not in labels:  # existence selector: "key"
            return False
    return True


def field_matches(selector, obj):
    """Equality field selectors on spec.nodeName and metadata.namespace/name, as pods have."""
    for term in filter(None, (t.strip() for t in selector.split(","))):
        key, _, value = term.partition("=")
        key = key.rstrip("=")
        section, _, field = key.partition(".")
        if obj.get(section, {}).get(field, "") != value:
            return False
    return True


def status(code, reason, message):
    return code, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                  "message": message, "reason": reason, "code": code}


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):  # quiet: the request log is what tests read
        pass

    def do_GET(self):
        with open(self.server.args.request_log, "a") as log:
            log.write(self.path + "\n")
        self.reply(*self.answer())

    def reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        self.write()

    def do_PATCH(self):
        self.write()

    def write(self):
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        with open(self.server.args.request_log, "a") as log:
            log.write(self.command + " " + self.path + "\n")
        self.reply(*self.answer_write(raw))

    def answer_write(self, raw):
        if not self.authorized():
            return status(401, "Unauthorized", "Unauthorized")
        with open(self.server.args.objects) as f:
            objects = json.load(f)
        if objects.get("forbid_writes"):
            return status(403, "Forbidden", "%s %s is forbidden: no RBAC" % (self.command, self.path))
        try:
            body = json.loads(raw)
        except ValueError:
            return status(400, "BadRequest", "body is not JSON")
        parts = self.path.strip("/").split("/")
        if self.command == "POST" and len(parts) == 6 and parts[:3] == ["apis", "events.k8s.io",
                                                                          "v1"] and parts[5] == "events":
            name = body.get("metadata", {}).get("name", "")
            if name in self.server.event_names:
                return status(409, "AlreadyExists", 'events "%s" already exists' % name)
            self.server.event_names.add(name)
        elif not (self.command == "PATCH" and len(parts) == 5 and parts[:3] == ["api", "v1", "nodes"]
                  and parts[4] == "status"):
            return status(404, "NotFound", "the server could not find the requested resource")
        with open(self.server.args.request_log + ".writes", "a") as log:
            log.write(json.dumps({"method": self.command, "path": self.path,
                                  "content_type": self.headers.get("Content-Type", ""),
                                  "body": body}) + "\n")
        return (201 if self.command == "POST" else 200), body

    def authorized(self):
        with open(self.server.args.token_file) as f:
            token = f.read().strip()
        return self.headers.get("Authorization") == "Bearer " + token

    def answer(self):
        if not self.authorized():
            return status(401, "Unauthorized", "Unauthorized")
        url = urllib.parse.urlparse(self.path)
        query = urllib.parse.parse_qs(url.query)
        parts = url.path.strip("/").split("/")
        with open(self.server.args.objects) as f:
            objects = json.load(f)
        if parts[:3] == ["api", "v1", "nodes"] and len(parts) == 3:
            items, kind = objects.get("nodes", []), "NodeList"
        elif len(parts) == 5 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "pods":
            items, kind = objects["namespaces"].get(parts[3], []), "PodList"
        elif parts == ["api", "v1", "pods"]:
            # Across namespaces; each pod's metadata.namespace is its key in the objects file.
            items, kind = [], "PodList"
            for ns, pods in sorted(objects["namespaces"].items()):
                for pod in pods:
                    pod = dict(pod, metadata=dict(pod.get("metadata", {}), namespace=ns))
                    items.append(pod)
        else:
            return status(404, "NotFound", "the server could not find the requested resource")
        selector = query.get("labelSelector", [""])[0]
        items = [i for i in items
                 if selector_matches(selector, i.get("metadata", {}).get("labels", {}))]
        fields = query.get("fieldSelector", [""])[0]
        items = [i for i in items if field_matches(fields, i)]
        start = 0
        if "continue" in query:
            try:
                start = int(base64.b64decode(query["continue"][0]).decode())
            except Exception:
                return status(400, "BadRequest", "invalid continue token")
        limit = int(query.get("limit", ["0"])[0]) or len(items) or 1
        page = items[start:start + limit]
        meta = {"resourceVersion": "1000"}
        if start + limit < len(items):
            meta["continue"] = base64.b64encode(str(start + limit).encode()).decode()
            meta["remainingItemCount"] = len(items) - start - limit
        return 200, {"kind": kind, "apiVersion": "v1", "metadata": meta, "items": page}


def main():
    p = argparse.ArgumentParser()
    for flag in ("--cert", "--key", "--token-file", "--objects", "--port-file", "--request-log"):
        p.add_argument(flag, required=True)
    args = p.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.args = args
    server.event_names = set()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(args.port_file + ".tmp", args.port_file)
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
