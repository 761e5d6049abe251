package hostconfig

// The hosts and where each keeps its MCP servers. Each names the public page
// the path and the entry format were taken from.

var stdURL = []string{"url"}

// Claude Desktop: handled by desktop_wrap.go (the whole file re-indented,
// an aggregate entry possible); listed here so that init can find it.
// https://modelcontextprotocol.io/quickstart/user
var claudeDesktop = &Host{
	Name: "claude-desktop", Title: "Claude Desktop",
	Doc: "https://modelcontextprotocol.io/quickstart/user",
	files: func(l Lookup) []File {
		var p string
		switch l.GOOS {
		case "windows":
			if a := l.get("APPDATA"); a != "" {
				p = l.join(a, "Claude", "claude_desktop_config.json")
			}
		case "darwin":
			if h := l.home(); h != "" {
				p = l.join(h, "Library", "Application Support", "Claude", "claude_desktop_config.json")
			}
		default:
			if d := l.xdgConfig(); d != "" {
				p = l.join(d, "Claude", "claude_desktop_config.json")
			}
		}
		return []File{{Path: p, Scope: "user", Format: JSON, Servers: []string{"mcpServers"}, URLKeys: stdURL}}
	},
}

// Claude Code: user and local scope in ~/.claude.json (top-level mcpServers,
// and projects.<dir>.mcpServers), which Claude Code rewrites itself; project
// scope in .mcp.json at the project root.
// $CLAUDE_CONFIG_DIR, when set, holds the .claude.json instead of $HOME.
// https://docs.anthropic.com/en/docs/claude-code/mcp (section "MCP installation scopes"),
// https://code.claude.com/docs/en/settings#environment-variables (CLAUDE_CONFIG_DIR)
var claudeCode = &Host{
	Name: "claude-code", Title: "Claude Code",
	Doc: "https://docs.anthropic.com/en/docs/claude-code/mcp",
	files: func(l Lookup) []File {
		var user string
		if d := l.get("CLAUDE_CONFIG_DIR"); d != "" {
			user = l.join(d, ".claude.json")
		} else if h := l.home(); h != "" {
			user = l.join(h, ".claude.json")
		}
		return []File{
			{Path: user, Scope: "user", Format: JSON, Servers: []string{"mcpServers"}, Projects: true, HostRewrites: true, URLKeys: stdURL},
			{Path: project(l, ".mcp.json"), Scope: "project", Format: JSON, Servers: []string{"mcpServers"}, URLKeys: stdURL},
		}
	},
}

// Cursor: ~/.cursor/mcp.json (user) and .cursor/mcp.json (project), mcpServers.
// https://cursor.com/docs/context/mcp (section "Configuration locations")
var cursor = &Host{
	Name: "cursor", Title: "Cursor",
	Doc: "https://cursor.com/docs/context/mcp",
	files: func(l Lookup) []File {
		var user string
		if h := l.home(); h != "" {
			user = l.join(h, ".cursor", "mcp.json")
		}
		return []File{
			{Path: user, Scope: "user", Format: JSON, Servers: []string{"mcpServers"}, URLKeys: stdURL},
			{Path: project(l, ".cursor", "mcp.json"), Scope: "project", Format: JSON, Servers: []string{"mcpServers"}, URLKeys: stdURL},
		}
	},
}

// VS Code: .vscode/mcp.json in the workspace and mcp.json in the user
// profile (key "servers", secrets as "inputs" referenced by ${input:ID}),
// and the older "mcp" section of the user settings.json. VS Code writes the
// two user files itself (MCP: Add Server, the settings UI), so unwrap puts
// back entries there. All JSONC.
// https://code.visualstudio.com/docs/copilot/reference/mcp-configuration
var vscode = &Host{
	Name: "vscode", Title: "VS Code",
	Doc: "https://code.visualstudio.com/docs/copilot/reference/mcp-configuration",
	files: func(l Lookup) []File {
		var user string
		switch l.GOOS {
		case "windows":
			if a := l.get("APPDATA"); a != "" {
				user = l.join(a, "Code", "User")
			}
		case "darwin":
			if h := l.home(); h != "" {
				user = l.join(h, "Library", "Application Support", "Code", "User")
			}
		default:
			if d := l.xdgConfig(); d != "" {
				user = l.join(d, "Code", "User")
			}
		}
		fs := []File{{Path: project(l, ".vscode", "mcp.json"), Scope: "project", Format: JSONC, Servers: []string{"servers"}, URLKeys: stdURL, StdioType: true}}
		if user != "" {
			fs = append(fs,
				File{Path: l.join(user, "mcp.json"), Scope: "user", Format: JSONC, Servers: []string{"servers"}, HostRewrites: true, URLKeys: stdURL, StdioType: true},
				File{Path: l.join(user, "settings.json"), Scope: "user", Format: JSONC, Servers: []string{"mcp", "servers"}, HostRewrites: true, URLKeys: stdURL, StdioType: true})
		}
		return fs
	},
}

// Windsurf: ~/.codeium/windsurf/mcp_config.json, mcpServers; a remote
// server's URL is "serverUrl".
// https://docs.windsurf.com/windsurf/cascade/mcp (section "mcp_config.json")
var windsurf = &Host{
	Name: "windsurf", Title: "Windsurf",
	Doc: "https://docs.windsurf.com/windsurf/cascade/mcp",
	files: func(l Lookup) []File {
		var p string
		if h := l.home(); h != "" {
			p = l.join(h, ".codeium", "windsurf", "mcp_config.json")
		}
		return []File{{Path: p, Scope: "user", Format: JSON, Servers: []string{"mcpServers"}, URLKeys: []string{"serverUrl", "url"}}}
	},
}

// Gemini CLI: ~/.gemini/settings.json (user) and .gemini/settings.json
// (project), mcpServers; "url" is SSE, "httpUrl" streamable HTTP. The
// settings file may hold comments.
// https://geminicli.com/docs/tools/mcp-server/ and https://geminicli.com/docs/cli/configuration
var geminiCLI = &Host{
	Name: "gemini-cli", Title: "Gemini CLI",
	Doc: "https://geminicli.com/docs/tools/mcp-server/",
	files: func(l Lookup) []File {
		var p string
		if h := l.home(); h != "" {
			p = l.join(h, ".gemini", "settings.json")
		}
		return []File{
			{Path: p, Scope: "user", Format: JSONC, Servers: []string{"mcpServers"}, URLKeys: []string{"httpUrl", "url"}},
			{Path: project(l, ".gemini", "settings.json"), Scope: "project", Format: JSONC, Servers: []string{"mcpServers"}, URLKeys: []string{"httpUrl", "url"}},
		}
	},
}

// Zed: settings.json (JSONC, rewritten by Zed's settings UI),
// "context_servers"; a custom server has command, args, env (older Zed: a
// "command" object with path, args, env), a remote one url and headers.
// Linux: $XDG_CONFIG_HOME/zed or ~/.config/zed; macOS ~/.config/zed;
// Windows %APPDATA%\Zed.
// https://zed.dev/docs/ai/mcp and https://zed.dev/docs/configuring-zed
var zed = &Host{
	Name: "zed", Title: "Zed",
	Doc: "https://zed.dev/docs/ai/mcp",
	files: func(l Lookup) []File {
		var p string
		switch l.GOOS {
		case "windows":
			if a := l.get("APPDATA"); a != "" {
				p = l.join(a, "Zed", "settings.json")
			}
		case "darwin":
			if h := l.home(); h != "" {
				p = l.join(h, ".config", "zed", "settings.json")
			}
		default:
			if d := l.xdgConfig(); d != "" {
				p = l.join(d, "zed", "settings.json")
			}
		}
		return []File{{Path: p, Scope: "user", Format: JSONC, Servers: []string{"context_servers"}, HostRewrites: true, URLKeys: stdURL}}
	},
}

// Codex CLI: $CODEX_HOME/config.toml, default ~/.codex/config.toml, one
// [mcp_servers.NAME] table per server (command, args, env, cwd, env_vars;
// url, bearer_token_env_var, http_headers for streamable HTTP).
// https://developers.openai.com/codex/mcp and https://github.com/openai/codex/blob/main/docs/config.md
var codex = &Host{
	Name: "codex", Title: "Codex CLI",
	Doc: "https://developers.openai.com/codex/mcp",
	files: func(l Lookup) []File {
		dir := l.get("CODEX_HOME")
		if dir == "" {
			if h := l.home(); h != "" {
				dir = l.join(h, ".codex")
			}
		}
		var p string
		if dir != "" {
			p = l.join(dir, "config.toml")
		}
		return []File{{Path: p, Scope: "user", Format: TOML, Servers: []string{"mcp_servers"}, URLKeys: stdURL}}
	},
}

// project is a project-scoped file under the working directory.
func project(l Lookup, elem ...string) string {
	if l.Dir == "" {
		return ""
	}
	return l.join(l.Dir, elem...)
}
