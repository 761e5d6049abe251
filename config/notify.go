package config

// NotifyConfig is the [notify] table.
type NotifyConfig struct {
	// Desktop sends a desktop notification when a request starts waiting
	// for the operator. Unset: on where this machine can show one (a D-Bus
	// session bus on Linux, macOS), off elsewhere (servers, containers, CI).
	Desktop *bool `toml:"desktop"`
}
