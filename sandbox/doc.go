// Package sandbox owns what confines a stdio server's process: the policy
// (read and write paths, network), the runtime defaults a server needs to
// start (system libraries, certificates, read-only package caches), the
// effective policy and its digest, what the running kernel can enforce of
// it, and the launcher that applies it. The launcher is mcp-guard itself,
// re-executed as "mcp-guard sandbox-exec POLICY PROGRAM -- ARGV..." (the
// policy as JSON in an argument, never in the environment) with the
// server's exact environment: on Linux it sets no_new_privs, applies
// Landlock (filesystem, TCP ports, signal and abstract-socket scopes) and a
// seccomp filter on socket(), then execs the server in its own place.
// Elsewhere it refuses to start the server.
package sandbox
