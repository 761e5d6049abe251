package secrets_test

import (
	"fmt"

	"github.com/mcp-guard/mcp-guard/secrets"
)

// The proxy builds one Redactor per configuration: the values it passes to
// upstreams, named, and the found-credential rules.
func Example() {
	var list []secrets.Secret
	env := map[string]string{"GITHUB_TOKEN": "ghp_exampleexampleexampleexample0000", "GIT_AUTHOR_NAME": "Ann", "PIN_PASS": "1234"}
	for _, name := range []string{"GITHUB_TOKEN", "GIT_AUTHOR_NAME", "PIN_PASS"} {
		if secrets.IsSecretName(name, nil, nil) {
			list = append(list, secrets.Secret{Server: "github", Name: name, Value: env[name]})
		}
	}
	known, short := secrets.NewKnown(list)
	for _, s := range short {
		fmt.Printf("warning: %s %s is shorter than %d bytes and is not redacted\n", s.Server, s.Name, secrets.MinLen)
	}
	r := secrets.NewRedactor(known, secrets.Options{Found: true, RedactFound: true})

	// A result on its way to the host.
	out, hits := r.RedactJSON([]byte(`{"content":[{"type":"text","text":"GITHUB_TOKEN=ghp_exampleexampleexampleexample0000"}]}`))
	fmt.Println(string(out))
	for _, h := range hits {
		fmt.Println(h)
	}
	// Arguments on their way to an upstream.
	if hits := r.Contains([]byte(`{"q":"Z2hwX2V4YW1wbGVleGFtcGxlZXhhbXBsZWV4YW1wbGUwMDAw"}`)); len(hits) > 0 {
		fmt.Println("refused:", hits[0])
	}
	// Output:
	// warning: github PIN_PASS is shorter than 8 bytes and is not redacted
	// {"content":[{"type":"text","text":"GITHUB_TOKEN=[redacted: github GITHUB_TOKEN]"}]}
	// github GITHUB_TOKEN (raw) at /content/0/text
	// refused: github GITHUB_TOKEN (base64) at /q
}
