package config

// Parse checks src, the config read from path, as Load does: the tests'
// way to check a config without a file.
func Parse(path, src string, env EnvFunc) (*Config, error) {
	return parse(path, src, env, false, "")
}
