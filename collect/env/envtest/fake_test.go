package envtest_test

import (
	"testing"

	"github.com/hone-rl/hone/collect/env/envtest"
)

func TestFake(t *testing.T) { envtest.Suite(t, envtest.Fake{}, envtest.SuiteOptions{}) }
