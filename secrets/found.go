package secrets

import "regexp"

// ruleSpec is a well-known credential format. Keywords are literal strings
// every match contains; a rule's expression runs only on text where the
// single pass saw one of them. The expressions follow gitleaks' default
// rules (MIT) for the same formats, trimmed to the token shapes the
// providers document; see docs/dependencies.md for why a curated set.
type ruleSpec struct {
	id       string
	keywords []string
	window   int // no match is longer: the rule runs on this much text either side of a keyword
	expr     string
}

// foundRules is read-only. Order is the rule's bit in a keyword pattern.
var foundRules = [...]ruleSpec{
	{"private-key", []string{"-----BEGIN"}, 16384,
		`-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\r\n\t :,-]{64,})`},
	{"aws-access-key-id", []string{"AKIA", "ASIA", "ABIA", "ACCA", "A3T"}, 64,
		`\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b`},
	{"github-token", []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, 64,
		`\bgh[pousr]_[0-9A-Za-z]{36}\b`},
	{"github-fine-grained-pat", []string{"github_pat_"}, 128,
		`\bgithub_pat_[0-9A-Za-z_]{82}\b`},
	{"gitlab-token", []string{"glpat-", "glrt-", "gldt-", "glptt-", "glsoat-", "glft-", "glimt-", "glcbt-", "gloas-", "glagent-"}, 256,
		`\bgl(?:pat|rt|dt|ptt|soat|ft|imt|cbt|oas|agent)-[0-9A-Za-z_.-]{20,}`},
	{"slack-token", []string{"xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xapp-"}, 512,
		`\b(?:xox[baprs]-[0-9A-Za-z-]{10,}|xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+)`},
	{"slack-webhook", []string{"hooks.slack.com"}, 128,
		`https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56}`},
	{"stripe-key", []string{"sk_live_", "sk_test_", "rk_live_", "rk_test_", "sk_prod_", "rk_prod_"}, 128,
		`\b[sr]k_(?:live|test|prod)_[0-9A-Za-z]{10,99}\b`},
	{"google-api-key", []string{"AIza"}, 64,
		`\bAIza[0-9A-Za-z_-]{35}`},
	{"openai-key", []string{"T3BlbkFJ"}, 512,
		`\bsk-(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}`},
	{"anthropic-key", []string{"sk-ant-"}, 512,
		`\bsk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_-]{80,}`},
	{"jwt", []string{"eyJ"}, 16384,
		`\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{16,}`},
	{"npm-token", []string{"npm_"}, 64,
		`\bnpm_[A-Za-z0-9]{36}\b`},
	{"huggingface-token", []string{"hf_"}, 64,
		`\bhf_[A-Za-z]{34}\b`},
	{"sendgrid-key", []string{"SG."}, 128,
		`\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}`},
	{"pypi-token", []string{"pypi-AgEIcHlwaS5vcmc"}, 1024,
		`pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}`},
	{"digitalocean-token", []string{"dop_v1_", "doo_v1_", "dor_v1_"}, 128,
		`\bdo[opr]_v1_[a-f0-9]{64}\b`},
}

// foundMinLen is shorter than any match of any rule: text shorter than this
// holds no found credential.
const foundMinLen = 15

// rule is a compiled ruleSpec.
type rule struct {
	id     string
	re     *regexp.Regexp
	window int
	label  []byte
}

func compileRules() []rule {
	rs := make([]rule, len(foundRules))
	for i, s := range foundRules {
		rs[i] = rule{id: s.id, re: regexp.MustCompile(s.expr), window: s.window, label: []byte("[redacted: credential " + s.id + "]")}
	}
	return rs
}
