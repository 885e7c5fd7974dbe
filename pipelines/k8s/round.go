// Package k8s runs the steps of the Argo WorkflowTemplate in round.yaml on
// one machine, so that the commands the cluster runs are the commands the
// tests run (TestRoundOverFakeS3) and that cmd runlocal runs by hand.
//
// It reads only what round.yaml uses: a DAG of tasks with dependencies,
// withSequence fan-out and input parameters, and container templates
// whose command, args and env values take {{workflow.parameters.X}},
// {{inputs.parameters.X}} and {{item}}. It passes over the fields that
// only say where and how a pod runs on the cluster (image, resources,
// volumes, envFrom, retryStrategy, activeDeadlineSeconds, synchronization,
// podGC and ttlStrategy, the CronWorkflow's schedule). Anything else it meets (a field such as a
// task's when or depends, or an env variable's valueFrom; a {{…}} it
// cannot fill; a step with no container) is an error rather than a silent
// skip.
package k8s

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/internal/procgroup"
	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/yaml"
)

// Round is a parsed WorkflowTemplate, or the workflow of a CronWorkflow.
// Load decodes it strictly: a field not named here is an error, so that a
// field that would change what Argo runs (a task's when, an env
// variable's valueFrom) is never passed over. Fields of type cluster are
// read and not used: they say where and how a pod runs, not what it runs.
type Round struct {
	APIVersion cluster `json:"apiVersion"`
	Kind       cluster `json:"kind"`
	Metadata   cluster `json:"metadata"`
	Spec       struct {
		workflowSpec
		WorkflowSpec *workflowSpec `json:"workflowSpec"` // a CronWorkflow's
		// The CronWorkflow's schedule: runlocal runs one workflow now.
		Schedules               cluster `json:"schedules"`
		ConcurrencyPolicy       cluster `json:"concurrencyPolicy"`
		StartingDeadlineSeconds cluster `json:"startingDeadlineSeconds"`
	} `json:"spec"`
}

// cluster is a field Run reads past (see Round).
type cluster = json.RawMessage

type workflowSpec struct {
	Entrypoint         string  `json:"entrypoint"`
	ServiceAccountName cluster `json:"serviceAccountName"`
	// When the cluster deletes a finished step's pod and the finished
	// workflow: runlocal's steps are processes, gone when they exit, and
	// it keeps no workflow object.
	PodGC       cluster `json:"podGC"`
	TTLStrategy cluster `json:"ttlStrategy"`
	Arguments   struct {
		Parameters []param `json:"parameters"`
	} `json:"arguments"`
	Templates []template `json:"templates"`
}

// spec is the workflow to run.
func (r *Round) spec() *workflowSpec {
	if r.Spec.WorkflowSpec != nil {
		return r.Spec.WorkflowSpec
	}
	return &r.Spec.workflowSpec
}

type param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type template struct {
	Name   string `json:"name"`
	Inputs struct {
		Parameters []param `json:"parameters"`
	} `json:"inputs"`
	DAG *struct {
		Tasks []task `json:"tasks"`
	} `json:"dag"`
	Container *struct {
		Command []string `json:"command"`
		Args    []string `json:"args"`
		// The step's own variables, filled as the args are: a parameter
		// a script reads as "$VAR" reaches it as data, where one pasted
		// into the script's text would be read as shell.
		Env []envVar `json:"env"`
		// The steps run in this process's environment, on this
		// machine's paths.
		Image        cluster `json:"image"`
		EnvFrom      cluster `json:"envFrom"`
		Resources    cluster `json:"resources"`
		VolumeMounts cluster `json:"volumeMounts"`
	} `json:"container"`
	// A failed step ends the round; no step is timed out (docs/cluster.md).
	RetryStrategy         cluster `json:"retryStrategy"`
	ActiveDeadlineSeconds cluster `json:"activeDeadlineSeconds"`
	NodeSelector          cluster `json:"nodeSelector"`
	Volumes               cluster `json:"volumes"`
	// A mutex keeps workflows of one run from training at once on the
	// cluster; Run runs one workflow, and a second runlocal of the run is
	// kept off by hone-train's own lock where the two share the run folder.
	Synchronization cluster `json:"synchronization"`
	// A strategic merge patch of the pod; Run honours only its
	// terminationGracePeriodSeconds, a cancelled step's time to stop
	// (grace), and refuses any other field.
	PodSpecPatch string `json:"podSpecPatch"`
}

// grace is how long the template's step has to stop after SIGTERM before
// what is left of it is killed: its podSpecPatch's
// terminationGracePeriodSeconds, else Kubernetes' default.
func (t template) grace() (time.Duration, error) {
	if t.PodSpecPatch == "" {
		return stepGrace, nil
	}
	var patch struct {
		TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds"`
	}
	if err := yaml.UnmarshalStrict([]byte(t.PodSpecPatch), &patch); err != nil {
		return 0, fmt.Errorf("template %s: podSpecPatch (only terminationGracePeriodSeconds is honoured here): %w", t.Name, err)
	}
	if g := patch.TerminationGracePeriodSeconds; g != nil {
		if *g < 0 {
			return 0, fmt.Errorf("template %s: podSpecPatch: terminationGracePeriodSeconds %d is negative", t.Name, *g)
		}
		return time.Duration(*g) * time.Second, nil
	}
	return stepGrace, nil
}

// envVar is a container's variable with a plain value; one taken from a
// Secret or a field (valueFrom) is refused when the file is loaded.
type envVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// step is the command line of template t's step and the variables its
// container sets, their references filled from the workflow's parameters
// wf, the step's inputs in and its withSequence item.
func (t template) step(wf, in map[string]string, item string) (argv, vars []string, err error) {
	for _, a := range append(append([]string{}, t.Container.Command...), t.Container.Args...) {
		v, err := fill(a, wf, in, item)
		if err != nil {
			return nil, nil, err
		}
		argv = append(argv, v)
	}
	for _, e := range t.Container.Env {
		v, err := fill(e.Value, wf, in, item)
		if err != nil {
			return nil, nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		vars = append(vars, e.Name+"="+v)
	}
	return argv, vars, nil
}

type task struct {
	Name         string   `json:"name"`
	Template     string   `json:"template"`
	Dependencies []string `json:"dependencies"`
	WithSequence *struct {
		Count string `json:"count"`
	} `json:"withSequence"`
	Arguments struct {
		Parameters []param `json:"parameters"`
	} `json:"arguments"`
}

// ErrRefused marks an error that refuses the template or a parameter
// before any step runs (a field Run cannot honour, a parameter the
// template lacks, a reference it cannot fill): the user's mistake, which
// runlocal reports with exit code 2, as the hone commands report theirs.
var ErrRefused = errors.New("refused")

// refusedError marks err as ErrRefused, its message unchanged.
type refusedError struct{ err error }

func (e refusedError) Error() string   { return e.err.Error() }
func (e refusedError) Unwrap() []error { return []error{e.err, ErrRefused} }

// refused marks err as ErrRefused.
func refused(err error) error { return refusedError{err} }

// Load reads a WorkflowTemplate or a CronWorkflow.
func Load(path string) (*Round, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, refused(err)
	}
	var r Round
	if err := yaml.UnmarshalStrict(b, &r); err != nil {
		// An unknown field is one Run would not act on as Argo does.
		return nil, refused(fmt.Errorf("%s (a field the local run cannot honour is refused): %w", path, err))
	}
	return &r, nil
}

// Options says how to run the steps.
type Options struct {
	// Params override the template's parameter defaults.
	Params map[string]string
	// Env is the steps' environment (nil: this process's).
	Env []string
	// Log receives each step's command and output.
	Log io.Writer
}

var refRE = regexp.MustCompile(`\{\{\s*([^}]*?)\s*\}\}`)

// Run runs the entrypoint: a DAG's tasks in an order that honours their
// dependencies, the items of a withSequence task at once; or a container
// template alone.
func (r *Round) Run(ctx context.Context, o Options) error {
	spec := r.spec()
	wf := map[string]string{}
	for _, p := range spec.Arguments.Parameters {
		wf[p.Name] = p.Value
	}
	for k, v := range o.Params {
		if _, ok := wf[k]; !ok {
			return refused(fmt.Errorf("parameter %q: the template has no such parameter", k))
		}
		wf[k] = v
	}
	templates := map[string]template{}
	for _, t := range spec.Templates {
		templates[t.Name] = t
	}
	entry, ok := templates[spec.Entrypoint]
	var order []task
	switch {
	case !ok:
		return refused(fmt.Errorf("entrypoint %q is no template", spec.Entrypoint))
	case entry.DAG != nil:
		var err error
		if order, err = topo(entry.DAG.Tasks); err != nil {
			return refused(err)
		}
	default:
		order = []task{{Name: entry.Name, Template: entry.Name}}
	}
	var logMu sync.Mutex
	mask := paramSecrets(wf)
	for _, tk := range order {
		t, ok := templates[tk.Template]
		if !ok || t.Container == nil {
			return refused(fmt.Errorf("task %s: template %q is not a container template", tk.Name, tk.Template))
		}
		grace, err := t.grace()
		if err != nil {
			return refused(err)
		}
		items := []string{""}
		if tk.WithSequence != nil {
			c, err := fill(tk.WithSequence.Count, wf, nil, "")
			if err != nil {
				return refused(fmt.Errorf("task %s: %w", tk.Name, err))
			}
			n, err := strconv.Atoi(c)
			if err != nil || n < 1 {
				return refused(fmt.Errorf("task %s: withSequence count %q is not a count", tk.Name, c))
			}
			items = items[:0]
			for i := range n {
				items = append(items, strconv.Itoa(i))
			}
		}
		g, gctx := errgroup.WithContext(ctx)
		for _, item := range items {
			g.Go(func() error {
				in := map[string]string{}
				for _, p := range tk.Arguments.Parameters {
					v, err := fill(p.Value, wf, nil, item)
					if err != nil {
						return refused(fmt.Errorf("task %s: %w", tk.Name, err))
					}
					in[p.Name] = v
				}
				argv, vars, err := t.step(wf, in, item)
				if err != nil {
					return refused(fmt.Errorf("task %s: %w", tk.Name, err))
				}
				out, err := runStep(gctx, argv, stepEnv(o.Env, vars), grace)
				logMu.Lock()
				if o.Log != nil {
					fmt.Fprintf(o.Log, "== %s %s: %q %q\n%s", tk.Name, item, maskArgv(mask, vars), maskArgv(mask, argv), out)
				}
				logMu.Unlock()
				if err != nil {
					return fmt.Errorf("task %s %s: %w\n%s", tk.Name, item, err, out)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
	}
	return nil
}

// paramSecrets masks what the workflow parameters carry of a secret in a
// step's command line as the log shows it: an object-store URL query's
// (the query parameter's endpoint=http://user:PASSWORD@host), as
// fileset.RedactURL masks it in the hone commands' own messages, which
// the log prints under the line. The longest values come first, so that
// one holding another is masked whole.
func paramSecrets(wf map[string]string) *strings.Replacer {
	var vals []string
	for _, v := range wf {
		if strings.Contains(v, "?") && fileset.RedactURL(v) != v {
			vals = append(vals, v)
		}
	}
	slices.SortFunc(vals, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	var pairs []string
	for _, v := range vals {
		pairs = append(pairs, v, fileset.RedactURL(v))
	}
	return strings.NewReplacer(pairs...)
}

// maskArgv is argv with mask applied to each word, before the log quotes
// them (quoting could respell a secret's characters and miss it).
func maskArgv(mask *strings.Replacer, argv []string) []string {
	shown := make([]string, len(argv))
	for i, a := range argv {
		shown[i] = mask.Replace(a)
	}
	return shown
}

// stepEnv is a step's environment: base with the container's variables
// after it, which win, as a container's env wins over what its envFrom
// Secrets hold (os/exec keeps a name's last value). A nil base is this
// process's environment, as os/exec reads it.
func stepEnv(base, vars []string) []string {
	return append((&exec.Cmd{Env: base}).Environ(), vars...)
}

// stepGrace is how long a cancelled step has to stop after SIGTERM before
// what is left of it is killed, unless its template says otherwise
// (grace): Kubernetes' default terminationGracePeriodSeconds.
const stepGrace = 30 * time.Second

// runStep runs a step's command and returns its output. A step cancelled
// (Ctrl-C, or another item of its task failed) is stopped as Kubernetes
// stops its pod: SIGTERM to all of it, the sh -c and what that started
// (dash runs a command line's last command as a child, not by exec), and
// SIGKILL to what is left after grace. Killing the sh alone left the
// hone command running, orphaned, and Run waiting for it to end. The step
// is started through the context's procgroup.Set, so that a command
// exiting at once (runlocal's second Ctrl-C) kills its group too.
func runStep(ctx context.Context, argv, env []string, grace time.Duration) ([]byte, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("no command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	procgroup.Own(cmd)
	cmd.Cancel = func() error { return procgroup.Terminate(cmd) }
	// Kubernetes reads a grace of 0 as a kill at once, os/exec's
	// WaitDelay as no kill at all.
	cmd.WaitDelay = max(grace, time.Nanosecond)
	// One writer for both: os/exec then writes to it from one goroutine
	// at a time, as CombinedOutput does.
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	set := procgroup.SetFrom(ctx)
	if err := set.Start(cmd, cmd.Start); err != nil {
		return nil, err
	}
	err := cmd.Wait()
	if ctx.Err() != nil {
		err = errors.Join(err, procgroup.Kill(cmd)) // what outlived the grace period
	}
	set.Forget(cmd)
	return out.Bytes(), err
}

// fill replaces the {{…}} references of s; one it cannot fill is an error.
func fill(s string, wf, in map[string]string, item string) (string, error) {
	var bad error
	out := refRE.ReplaceAllStringFunc(s, func(m string) string {
		ref := refRE.FindStringSubmatch(m)[1]
		switch {
		case ref == "item" && item != "":
			return item
		case strings.HasPrefix(ref, "workflow.parameters."):
			if v, ok := wf[strings.TrimPrefix(ref, "workflow.parameters.")]; ok {
				return v
			}
		case strings.HasPrefix(ref, "inputs.parameters.") && in != nil:
			if v, ok := in[strings.TrimPrefix(ref, "inputs.parameters.")]; ok {
				return v
			}
		}
		if bad == nil {
			bad = fmt.Errorf("cannot fill %s", m)
		}
		return m
	})
	return out, bad
}

// topo orders tasks so each comes after its dependencies.
func topo(tasks []task) ([]task, error) {
	byName := map[string]task{}
	for _, t := range tasks {
		if _, dup := byName[t.Name]; dup {
			// Argo refuses a DAG with two tasks of one name; kept, the
			// second would silently replace the first.
			return nil, fmt.Errorf("two tasks are named %q", t.Name)
		}
		byName[t.Name] = t
	}
	var out []task
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(string) error
	visit = func(n string) error {
		t, ok := byName[n]
		if !ok {
			return fmt.Errorf("dependency %q is no task", n)
		}
		switch state[n] {
		case 1:
			return fmt.Errorf("task %s depends on itself", n)
		case 2:
			return nil
		}
		state[n] = 1
		for _, d := range t.Dependencies {
			if err := visit(d); err != nil {
				return err
			}
		}
		state[n] = 2
		out = append(out, t)
		return nil
	}
	for _, t := range tasks {
		if err := visit(t.Name); err != nil {
			return nil, err
		}
	}
	return out, nil
}
