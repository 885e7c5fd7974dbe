// Package flagval holds pflag values that several stages' Options share:
// today a float flag whose "no value" is a sentinel (NaN, -1) that the
// usage text explains in words, so that --help does not print the
// sentinel as if it were a setting.
package flagval
