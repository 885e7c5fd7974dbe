//go:build unix

// Command tokbench measures Hone's tokenizer encode throughput on a
// deterministic ~10 MB mixed corpus (English-like prose, code, CJK, numbers,
// whitespace runs, emoji) for the Qwen3, Llama 3.1 and Gemma 3 tokenizers, runs Hugging
// Face's JavaScript tokenizers on the same corpus in the same run, prints both
// side by side and fails when their token ids differ.
//
// Run from the repository root (the JavaScript side needs
// `cd testdata/tokenizers/js && npm ci` once):
//
//	go run ./internal/bench/tokbench
//	go run ./internal/bench/tokbench --mb 2 --js=false
//
// It builds on Unix only: its measurements read getrusage.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hone-rl/hone/format/modelfolder"
	"github.com/hone-rl/hone/format/tokenizer"
	"github.com/spf13/pflag"
)

type options struct {
	MB        float64
	Seed      uint64
	Dir       string
	JS        bool
	Node      string
	Script    string
	Tokenizer []string
	Repeat    int
	CPUProf   string
}

func main() {
	var o options
	fs := pflag.NewFlagSet("tokbench", pflag.ExitOnError)
	fs.Float64Var(&o.MB, "mb", 10, "corpus size in MB")
	fs.Uint64Var(&o.Seed, "seed", 1, "corpus seed")
	fs.StringVar(&o.Dir, "dir", "testdata/tokenizers", "folder with one subfolder per tokenizer")
	fs.BoolVar(&o.JS, "js", true, "also run the JavaScript reference (node)")
	fs.StringVar(&o.Node, "node", "node", "node binary")
	fs.StringVar(&o.Script, "script", "testdata/tokenizers/js/bench.mjs", "JavaScript bench script")
	fs.StringSliceVar(&o.Tokenizer, "tokenizer", []string{"qwen3", "llama3", "gemma3"}, "tokenizers (subfolders of -dir; gemma3 is where npm ci puts it, see tokenizerDir)")
	fs.IntVar(&o.Repeat, "repeat", 3, "timed passes of Hone and of the JavaScript reference each (the best of each is reported)")
	fs.StringVar(&o.CPUProf, "cpuprofile", "", "write a CPU profile of the Hone passes to this file")
	_ = fs.Parse(os.Args[1:])

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, o, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tokbench:", err)
		os.Exit(1)
	}
}

// tokenizerDir is the folder of a tokenizer under dir: its subfolder, but
// for Gemma 3, whose file is too large to commit and is read where npm ci
// in dir/js installs it.
func tokenizerDir(dir, name string) string {
	if name == "gemma3" {
		return filepath.Join(dir, "js", "node_modules", "@lenml", "tokenizer-gemma3", "models")
	}
	return filepath.Join(dir, name)
}

// result is one tokenizer's measurement, by Hone or by the reference.
type result struct {
	Tokenizer string  `json:"tokenizer"`
	Seconds   float64 `json:"seconds"`     // wall clock
	CPU       float64 `json:"cpu_seconds"` // user+system time of the whole process
	Tokens    int     `json:"tokens"`
	Bytes     int     `json:"bytes"`
	Hash      uint32  `json:"hash"`
}

// Rates are per CPU second: the machines this runs on are often shared, and
// wall-clock rates then measure the neighbours.
func (r result) mbps() float64     { return float64(r.Bytes) / 1e6 / r.CPU }
func (r result) tps() float64      { return float64(r.Tokens) / r.CPU }
func (r result) wallMBps() float64 { return float64(r.Bytes) / 1e6 / r.Seconds }

// cpuSeconds is the user+system time this process has used.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func run(ctx context.Context, o options, w io.Writer) error {
	docs := corpus(o.Seed, int(o.MB*1e6))
	total := 0
	for _, d := range docs {
		total += len(d)
	}
	fmt.Fprintf(w, "corpus: %d documents, %.2f MB (seed %d); GOMAXPROCS %d\n", len(docs), float64(total)/1e6, o.Seed, runtime.GOMAXPROCS(0))
	// Gemma 3's file is not committed: without npm ci it is left out, said
	// so, rather than failing the bench of the others.
	var names []string
	for _, name := range o.Tokenizer {
		if _, err := os.Stat(tokenizerDir(o.Dir, name)); err != nil && name == "gemma3" {
			fmt.Fprintf(w, "gemma3: left out, %s is missing (cd testdata/tokenizers/js && npm ci)\n", tokenizerDir(o.Dir, name))
			continue
		}
		names = append(names, name)
	}
	o.Tokenizer = names

	var js map[string]result
	if o.JS {
		var err error
		if js, err = runJS(ctx, o, docs); err != nil {
			return err
		}
	}
	if o.CPUProf != "" {
		f, err := os.Create(o.CPUProf)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Fprintf(w, "%-7s %10s %11s %10s %11s | %10s %11s %10s | %6s  %s\n", "", "Hone MB/s", "Hone tok/s", "wall MB/s", "‖ wall MB/s", "JS MB/s", "JS tok/s", "wall MB/s", "ratio", "tokens")
	var mismatch []string
	for _, name := range o.Tokenizer {
		f, err := modelfolder.Open(tokenizerDir(o.Dir, name), modelfolder.Tokenizer)
		if err != nil {
			return err
		}
		tk := f.Tokenizer
		var best result
		for range max(o.Repeat, 1) {
			if err := ctx.Err(); err != nil {
				return err
			}
			r := encodeAll(tk, docs)
			if best.CPU == 0 || r.CPU < best.CPU {
				best = r
			}
		}
		par := encodeParallel(tk, docs)
		line := fmt.Sprintf("%-7s %10.2f %11.0f %10.2f %11.2f |", name, best.mbps(), best.tps(), best.wallMBps(), par.wallMBps())
		if j, ok := js[name]; ok {
			same := j.Tokens == best.Tokens && j.Hash == best.Hash
			status := fmt.Sprintf("%d (same ids)", best.Tokens)
			if !same {
				status = fmt.Sprintf("DIFFER: Hone %d (hash %08x), JS %d (hash %08x)", best.Tokens, best.Hash, j.Tokens, j.Hash)
				mismatch = append(mismatch, name)
			}
			line += fmt.Sprintf(" %10.2f %11.0f %10.2f | %5.1fx  %s", j.mbps(), j.tps(), j.wallMBps(), best.mbps()/j.mbps(), status)
		} else {
			line += fmt.Sprintf(" %10s %11s %10s | %6s  %d", "-", "-", "-", "-", best.Tokens)
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w, "MB/s and tok/s per CPU second of the process (user+system); wall: per wall-clock second.")
	fmt.Fprintln(w, "Hone and JS: best of", max(o.Repeat, 1), "single-goroutine passes each; ‖: all documents over GOMAXPROCS goroutines; ratio = Hone MB/s ÷ JS MB/s (CPU)")
	if len(mismatch) > 0 {
		return fmt.Errorf("token ids differ from the JavaScript reference for %s", strings.Join(mismatch, ", "))
	}
	return nil
}

// hashIDs folds ids the way bench.mjs does: h = h*31 + id (mod 2^32).
func hashIDs(h uint32, ids []int) uint32 {
	for _, id := range ids {
		h = h*31 + uint32(id)
	}
	return h
}

func encodeAll(tk *tokenizer.Tokenizer, docs []string) result {
	var r result
	ids := make([]int, 0, 1<<16)
	start, cpu := time.Now(), cpuSeconds()
	for _, d := range docs {
		ids = tk.AppendEncode(ids[:0], d, false)
		r.Tokens += len(ids)
		r.Hash = hashIDs(r.Hash, ids)
		r.Bytes += len(d)
	}
	r.Seconds, r.CPU = time.Since(start).Seconds(), cpuSeconds()-cpu
	return r
}

func encodeParallel(tk *tokenizer.Tokenizer, docs []string) result {
	var r result
	n := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	start := time.Now()
	counts := make([]int, n)
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := make([]int, 0, 1<<16)
			for i := g; i < len(docs); i += n {
				ids = tk.AppendEncode(ids[:0], docs[i], false)
				counts[g] += len(ids)
			}
		}()
	}
	wg.Wait()
	r.Seconds = time.Since(start).Seconds()
	for _, c := range counts {
		r.Tokens += c
	}
	for _, d := range docs {
		r.Bytes += len(d)
	}
	return r
}

func runJS(ctx context.Context, o options, docs []string) (map[string]result, error) {
	f, err := os.CreateTemp("", "tokbench-*.json")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	if err := json.NewEncoder(f).Encode(docs); err != nil {
		f.Close()
		return nil, fmt.Errorf("write corpus: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("write corpus: %w", err)
	}
	// The reference gets as many passes as Hone, its best reported too.
	args := append([]string{o.Script, fmt.Sprintf("--repeat=%d", max(o.Repeat, 1)), f.Name()}, o.Tokenizer...)
	cmd := exec.CommandContext(ctx, o.Node, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) || errors.Is(err, exec.ErrNotFound) {
			return nil, fmt.Errorf("%s %s: %w (install with: cd testdata/tokenizers/js && npm ci; or pass -js=false)", o.Node, o.Script, err)
		}
		return nil, err
	}
	var rep struct {
		Results []result `json:"results"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return nil, fmt.Errorf("%s output: %w", o.Script, err)
	}
	m := map[string]result{}
	for _, r := range rep.Results {
		m[r.Tokenizer] = r
	}
	return m, nil
}

// corpus builds documents of a seeded mix of kinds until size bytes.
func corpus(seed uint64, size int) []string {
	r := rand.New(rand.NewPCG(seed, 0x70c))
	var docs []string
	total := 0
	for total < size {
		var sb strings.Builder
		n := 1000 + r.IntN(16000)
		switch k := r.IntN(100); {
		case k < 45:
			prose(r, &sb, n)
		case k < 70:
			code(r, &sb, n)
		case k < 85:
			cjk(r, &sb, n)
		case k < 93:
			numbers(r, &sb, n)
		default:
			mixed(r, &sb, n)
		}
		docs = append(docs, sb.String())
		total += sb.Len()
	}
	return docs
}

var words = strings.Fields(`the of and to a in is it you that he was for on are with as I his they be at one have this from
or had by hot word but what some we can out other were all there when up use your how said an each she which do their time if
will way about many then them write would like so these her long make thing see him two has look more day could go come did
number sound no most people my over know water than call first who may down side been now find any new work part take get
place made live where after back little only round man year came show every good me give our under name very through just
form sentence great think say help low line differ turn cause much mean before move right boy old too same tell does set three
want air well also play small end put home read hand port large spell add even land here must big high such follow act why ask
men change went light kind off need house picture try us again animal point mother world near build self earth father tokenizer
gradient policy reward trajectory model training batch sampler Hugging Face Qwen Llama don't can't won't it's I'm they'll we've
you're she'd`)

var punct = []string{".", ",", ",", ";", ":", "!", "?", " —", "…", "\"", "'"}

func prose(r *rand.Rand, sb *strings.Builder, n int) {
	for sb.Len() < n {
		sentence := 4 + r.IntN(18)
		for i := 0; i < sentence; i++ {
			w := words[int(float64(len(words))*r.Float64()*r.Float64())] // skewed towards common words
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			} else {
				sb.WriteByte(' ')
			}
			if r.IntN(40) == 0 {
				w = strings.ToUpper(w)
			}
			sb.WriteString(w)
			if i < sentence-1 && r.IntN(12) == 0 {
				sb.WriteString(punct[r.IntN(3)])
			}
		}
		sb.WriteString(punct[r.IntN(len(punct))])
		switch r.IntN(10) {
		case 0:
			sb.WriteString("\n\n")
		case 1:
			sb.WriteString("  \n")
		default:
			sb.WriteByte(' ')
		}
	}
}

var idents = strings.Fields("i j n err ctx buf out len tokens ids x y self config value result index count data fmt os strings make append return")

func code(r *rand.Rand, sb *strings.Builder, n int) {
	indent := 0
	tab := "\t"
	if r.IntN(2) == 0 {
		tab = "    "
	}
	for sb.Len() < n {
		sb.WriteString(strings.Repeat(tab, indent))
		a, b := idents[r.IntN(len(idents))], idents[r.IntN(len(idents))]
		switch r.IntN(8) {
		case 0:
			fmt.Fprintf(sb, "for %s := 0; %s < %d; %s++ {\n", a, a, r.IntN(1000), a)
			indent++
		case 1:
			fmt.Fprintf(sb, "if %s != nil {\n", b)
			indent++
		case 2:
			if indent > 0 {
				indent--
			}
			sb.WriteString("}\n")
		case 3:
			fmt.Fprintf(sb, "%s = append(%s, %s[%d:%d]...) // %s %s\n", a, a, b, r.IntN(10), r.IntN(100), words[r.IntN(len(words))], words[r.IntN(len(words))])
		case 4:
			fmt.Fprintf(sb, "def %s_%s(%s, %s=%d):\n", a, b, a, b, r.IntN(64))
		case 5:
			fmt.Fprintf(sb, "%s := fmt.Sprintf(\"%%d: %%s\", %s, %q)   \n", a, b, words[r.IntN(len(words))])
		case 6:
			sb.WriteString("\n")
		default:
			fmt.Fprintf(sb, "return %s.%s(%s) * %d.%d\n", a, b, a, r.IntN(100), r.IntN(1000))
		}
	}
}

var cjkChars = []rune("的一是不了人我在有他这中大来上个国和们地到以说时要就出会可也你对生能而子那得于着下自之年过发后作里用道行所然家种事成方多经么去法学如都同现当没动面起看天分还进好小部其些主样理心她本前开但因只从想实日军者意无力它与长把机十民第公此已工使情明性知全三又关点正业外将两高间由问很最重并物手应战向头文体政美相见被利什二等产或新己制身果加西斯月话合回特代内信表化老给世位次度门任常先海通教儿原东声提立及比员解水名真论处走义各入几口认条平系气题活尔更别打女变四神总何电数安少报才结反受目太量再感建务做接必场件计管期市直德资命山金指克许统区保至队形社便空决治展马科司五基眼书非则听白却界达光放强即像难且权思王象完设式色路记南品住告类求据程北边死张该交规万取拉格望觉术领共确传师观清今切院让识候带导争运笑飞风步改收根干造言联持组每济车亲极林服快办议往元英士证近失转夫令准布始怎呢存未远叫台单影具罗字爱击流备兵连调深商算质团集百需价花党华城石级整府离况亚请技际约示复病息究线似官火断精满支视消越器容照须九增研写称企八功吗包片史委乎查轻易早曾除农找装广显吧阿李标谈吃图念六引历首医局突专费号尽另周较注语仅考落青随选列武红响虽推势参希古众构房半节土投某案黑维革划敌致陈律足态护七兴派孩验责营星够章音跟志底站严巴例防族供效续施留讲型料终答紧黄绝奇察母京段依批群项故按河米围江织害斗双境客纪采举杀攻父苏密低朝友诉止细愿千值仍男")
var kana = []rune("あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをんアイウエオカキクケコサシスセソタチツテトナニヌネノ")

func cjk(r *rand.Rand, sb *strings.Builder, n int) {
	for sb.Len() < n {
		set := cjkChars
		if r.IntN(4) == 0 {
			set = kana
		}
		for i := 3 + r.IntN(25); i > 0; i-- {
			sb.WriteRune(set[r.IntN(len(set))])
		}
		sb.WriteString([]string{"，", "。", "、", "！", "？", "\n"}[r.IntN(6)])
		if r.IntN(10) == 0 {
			sb.WriteString(" Hone " + words[r.IntN(len(words))] + " ")
		}
	}
}

func numbers(r *rand.Rand, sb *strings.Builder, n int) {
	for sb.Len() < n {
		for c := 0; c < 6; c++ {
			switch r.IntN(5) {
			case 0:
				fmt.Fprintf(sb, "%d", r.Int64N(1e12))
			case 1:
				fmt.Fprintf(sb, "%.4f", r.NormFloat64()*1000)
			case 2:
				fmt.Fprintf(sb, "%04d-%02d-%02d", 1900+r.IntN(200), 1+r.IntN(12), 1+r.IntN(28))
			case 3:
				fmt.Fprintf(sb, "%d,%03d,%03d", r.IntN(1000), r.IntN(1000), r.IntN(1000))
			default:
				fmt.Fprintf(sb, "%d", r.IntN(10))
			}
			sb.WriteString([]string{"\t", " | ", ",", "  "}[r.IntN(4)])
		}
		sb.WriteString("\n")
	}
}

var emoji = []string{"😀", "🎉", "👍🏽", "🚀", "❤️", "👨‍👩‍👧", "🇯🇵", "✨"}

func mixed(r *rand.Rand, sb *strings.Builder, n int) {
	for sb.Len() < n {
		switch r.IntN(6) {
		case 0:
			sb.WriteString(strings.Repeat(" ", 1+r.IntN(40)))
		case 1:
			sb.WriteString(strings.Repeat("\n", 1+r.IntN(6)))
		case 2:
			sb.WriteString(emoji[r.IntN(len(emoji))])
		case 3:
			sb.WriteString("<|im_start|>" + words[r.IntN(len(words))] + "\n")
		case 4:
			sb.WriteString(strings.Repeat("\t", 1+r.IntN(5)) + idents[r.IntN(len(idents))] + "  \n")
		default:
			sb.WriteString(" " + words[r.IntN(len(words))] + "'s")
		}
	}
}
