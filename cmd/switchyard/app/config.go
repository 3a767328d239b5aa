package app

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// EnvPrefix prefixes the environment variable of every flag:
// --min-sync-period is SWITCHYARD_MIN_SYNC_PERIOD.
const EnvPrefix = "SWITCHYARD"

// applyConfig fills every flag not given on the command line from its
// SWITCHYARD_* environment variable, else from the --config file: flag >
// environment > file > default. A file key that names no flag is an error,
// so a typo never passes silently.
func applyConfig(fs *pflag.FlagSet, configFile string) error {
	v := viper.New()
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	if configFile != "" {
		v.SetConfigFile(configFile)
		v.SetConfigType("yaml")
		if err := v.ReadInConfig(); err != nil {
			return fmt.Errorf("config file %s: %w", configFile, err)
		}
		for _, k := range v.AllKeys() {
			if fs.Lookup(k) == nil || k == "config" {
				return fmt.Errorf("config file %s: unknown setting %q (keys are flag names, e.g. min-sync-period)", configFile, k)
			}
		}
	}
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Name == "config" || !v.IsSet(f.Name) {
			return
		}
		val := stringValue(v.Get(f.Name))
		if e := fs.Set(f.Name, val); e != nil {
			err = fmt.Errorf("setting --%s from %s_%s or the config file: %w", f.Name, EnvPrefix,
				strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_")), e)
		}
	})
	return err
}

// stringValue renders a config value the way the flag parser reads it.
func stringValue(x any) string {
	switch t := x.(type) {
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			parts[i] = fmt.Sprint(e)
		}
		return strings.Join(parts, ",")
	case []string:
		return strings.Join(slices.Clone(t), ",")
	}
	return fmt.Sprint(x)
}
