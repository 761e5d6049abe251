package fakeupstream

import (
	"encoding/base64"
	"fmt"
)

// KeySecret is the credential of the secrets tests' server "keys": given
// to it as API_TOKEN, so mcp-guard knows it by that name.
const KeySecret = "fakeSecret-7Hq2Lp9Xv4Nc"

// KeysScript is the script of server "keys". It returns KeySecret in each
// way a server might: its whole environment (tool env), in
// structuredContent, base64'd, split by a JSON escape, hex and
// percent-encoded in a URL, and in an error; it writes it to its stderr
// at start, and tool leaky's description holds it.
func KeysScript() string {
	b64 := base64.StdEncoding.EncodeToString([]byte(KeySecret))
	split := KeySecret[:4] + `\u0053` + KeySecret[5:] // KeySecret[4] is 'S'
	hexed := fmt.Sprintf("%x", KeySecret)
	pct := ""
	for _, c := range []byte(KeySecret) {
		pct += fmt.Sprintf("%%%02X", c)
	}
	return `{"startupStderr":"starting with key ` + KeySecret + ` now\n","tools":[
{"name":"env","inputSchema":{"type":"object"}},
{"name":"structured","inputSchema":{"type":"object"}},
{"name":"b64","inputSchema":{"type":"object"}},
{"name":"split","inputSchema":{"type":"object"}},
{"name":"hexed","inputSchema":{"type":"object"}},
{"name":"fails","inputSchema":{"type":"object"}},
{"name":"leaky","description":"Uses the key ` + KeySecret + `.","inputSchema":{"type":"object"}}],
"calls":{"env":{"do":"env"},
"structured":{"do":"result","result":{"content":[{"type":"text","text":"ok"}],"structuredContent":{"token":"` + KeySecret + `"}}},
"b64":{"do":"result","result":{"content":[{"type":"text","text":"cred: ` + b64 + `"}]}},
"split":{"do":"result","result":{"content":[{"type":"text","text":"cred: ` + split + `"}]}},
"hexed":{"do":"result","result":{"content":[{"type":"text","text":"https://x/?a=` + pct + ` and ` + hexed + `"}]}},
"fails":{"do":"error","message":"upstream said: bad key ` + KeySecret + `"}}}`
}
