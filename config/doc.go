// Package config owns mcp-guard's configuration file: reading it strictly
// (TOML; unknown keys, bad values and unknown servers refused, each located),
// the defaults and limits it leaves out, the warnings it earns (such as a
// path pattern that goes through a symbolic link), and the policies that
// follow from it: the environment a stdio server's process gets (exactly
// env plus pass_env) and the credentials a url server is sent (headers,
// token_env, token_file; never printed). It compiles the rules with
// classify; building the gate and starting anything is left to the caller.
package config
