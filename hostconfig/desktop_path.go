package hostconfig

import (
	"fmt"
	"path"
	"strings"
)

// DesktopFileName is the name of Claude Desktop's config file.
const DesktopFileName = "claude_desktop_config.json"

// DesktopPath returns where Claude Desktop keeps its config on goos, with
// variables read through env (os.LookupEnv in the command):
//
//	linux (and other Unix)  $XDG_CONFIG_HOME/Claude/claude_desktop_config.json,
//	                        else ~/.config/Claude/claude_desktop_config.json
//	darwin                  ~/Library/Application Support/Claude/claude_desktop_config.json
//	windows                 %APPDATA%\Claude\claude_desktop_config.json
func DesktopPath(goos string, env func(string) (string, bool)) (string, error) {
	get := func(name string) string {
		v, ok := env(name)
		if !ok {
			return ""
		}
		return v
	}
	switch goos {
	case "windows":
		appData := get("APPDATA")
		if appData == "" {
			return "", fmt.Errorf("desktop: %%APPDATA%% is not set, so the Claude Desktop config cannot be found; give its path")
		}
		return strings.TrimRight(appData, `\/`) + `\Claude\` + DesktopFileName, nil
	case "darwin":
		home := get("HOME")
		if home == "" {
			return "", fmt.Errorf("desktop: $HOME is not set, so the Claude Desktop config cannot be found; give its path")
		}
		return path.Join(home, "Library", "Application Support", "Claude", DesktopFileName), nil
	default:
		// The XDG spec says a relative $XDG_CONFIG_HOME is to be ignored.
		if dir := get("XDG_CONFIG_HOME"); strings.HasPrefix(dir, "/") {
			return path.Join(dir, "Claude", DesktopFileName), nil
		}
		home := get("HOME")
		if home == "" {
			return "", fmt.Errorf("desktop: neither $XDG_CONFIG_HOME nor $HOME is set, so the Claude Desktop config cannot be found; give its path")
		}
		return path.Join(home, ".config", "Claude", DesktopFileName), nil
	}
}
