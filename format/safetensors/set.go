package safetensors

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hone-rl/hone/format/internal/exactjson"
)

// IndexName is the file that maps tensor names to shards in a sharded checkpoint.
const IndexName = "model.safetensors.index.json"

// Index is the content of model.safetensors.index.json.
type Index struct {
	Metadata  map[string]any    `json:"metadata"`
	WeightMap map[string]string `json:"weight_map"`
}

// Set is a checkpoint: one or more safetensors files looked up by tensor name.
type Set struct {
	files []*File
	where map[string]*File
	names []string
}

// Open opens a checkpoint at path, which may be
//   - a .safetensors file;
//   - a folder with model.safetensors.index.json (a sharded checkpoint: every shard
//     named in weight_map is opened and must hold exactly the tensors mapped to it);
//   - a folder with model.safetensors;
//   - a folder with exactly one *.safetensors file (e.g. adapter_model.safetensors).
func Open(path string) (*Set, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if !st.IsDir() {
		f, err := OpenFile(path)
		if err != nil {
			return nil, err
		}
		return newSet([]*File{f})
	}
	idx := filepath.Join(path, IndexName)
	if _, err := os.Stat(idx); err == nil {
		return OpenIndex(idx)
	}
	single := filepath.Join(path, "model.safetensors")
	if _, err := os.Stat(single); err == nil {
		return Open(single)
	}
	matches, err := filepath.Glob(filepath.Join(path, "*.safetensors"))
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	switch len(matches) {
	case 1:
		return Open(matches[0])
	case 0:
		return nil, fmt.Errorf("safetensors: %s holds no %s, model.safetensors or other *.safetensors file", path, IndexName)
	}
	return nil, fmt.Errorf("safetensors: %s holds %d *.safetensors files but no %s to say which belong together", path, len(matches), IndexName)
}

// OpenIndex opens the sharded checkpoint described by the index file at path.
func OpenIndex(path string) (*Set, error) {
	raw, err := exactjson.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	// By exact key names, as transformers reads the index (a dict): a
	// "Weight_Map" beside weight_map is not merged into it.
	var idx Index
	if err := exactjson.Unmarshal(raw, &idx); err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, fmt.Errorf("safetensors: %s: empty or missing weight_map", path)
	}
	dir := filepath.Dir(path)
	byShard := map[string][]string{}
	for name, shard := range idx.WeightMap {
		// A shard must be a plain file beside the index: never a path out of the folder.
		if shard == "" || shard != filepath.Base(shard) || shard == "." || shard == ".." || strings.ContainsAny(shard, `/\`) {
			return nil, fmt.Errorf("safetensors: %s: tensor %q maps to %q, which is not a file name in this folder", path, name, shard)
		}
		byShard[shard] = append(byShard[shard], name)
	}
	shards := make([]string, 0, len(byShard))
	for s := range byShard {
		shards = append(shards, s)
	}
	sort.Strings(shards)
	var files []*File
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	for _, s := range shards {
		f, err := OpenFile(filepath.Join(dir, s))
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("%w (shard listed in %s)", err, path)
		}
		files = append(files, f)
		want := byShard[s]
		for _, name := range want {
			if _, ok := f.Info(name); !ok {
				closeAll()
				return nil, fmt.Errorf("safetensors: %s maps %q to %s, which does not hold it", path, name, s)
			}
		}
		if got := len(f.header.Tensors); got != len(want) {
			closeAll()
			// Name a tensor the index leaves out, so the user can tell a stale
			// index from a wrong shard without listing both.
			mapped := map[string]bool{}
			for _, name := range want {
				mapped[name] = true
			}
			var extra string
			for _, n := range f.Names() {
				if !mapped[n] {
					extra = n
					break
				}
			}
			return nil, fmt.Errorf("safetensors: shard %s holds %q, which %s does not map to it (%d tensors there, %d mapped)", f.path, extra, path, got, len(want))
		}
	}
	set, err := newSet(files)
	if err != nil {
		closeAll()
		return nil, err
	}
	return set, nil
}

func newSet(files []*File) (*Set, error) {
	s := &Set{files: files, where: map[string]*File{}}
	for _, f := range files {
		for _, t := range f.header.Tensors {
			if other, dup := s.where[t.Name]; dup {
				return nil, fmt.Errorf("safetensors: tensor %q is in both %s and %s", t.Name, other.path, f.path)
			}
			s.where[t.Name] = f
			s.names = append(s.names, t.Name)
		}
	}
	sort.Strings(s.names)
	return s, nil
}

// Names returns every tensor name, sorted.
func (s *Set) Names() []string { return append([]string(nil), s.names...) }

// Files returns the opened files (one per shard), in shard-name order.
func (s *Set) Files() []*File { return append([]*File(nil), s.files...) }

// Metadata returns the __metadata__ of the first file (shards normally agree).
func (s *Set) Metadata() map[string]string {
	if len(s.files) == 0 {
		return nil
	}
	return s.files[0].Metadata()
}

// Info returns the dtype and shape of a tensor.
func (s *Set) Info(name string) (TensorInfo, bool) {
	f, ok := s.where[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.Info(name)
}

// FileOf returns the path of the file that holds the tensor called name
// ("" when none does, or for a file read with ReadBytes), so that an error
// about a tensor of a sharded checkpoint can name its shard.
func (s *Set) FileOf(name string) string {
	if f, ok := s.where[name]; ok {
		return f.path
	}
	return ""
}

// Has reports whether the checkpoint holds a tensor called name.
func (s *Set) Has(name string) bool { _, ok := s.where[name]; return ok }

func (s *Set) file(name string) (*File, error) {
	f, ok := s.where[name]
	if !ok {
		return nil, fmt.Errorf("safetensors: %q: %w", name, ErrNotFound)
	}
	return f, nil
}

// Bytes returns the raw bytes of a tensor; valid until Close.
func (s *Set) Bytes(name string) ([]byte, error) {
	f, err := s.file(name)
	if err != nil {
		return nil, err
	}
	return f.Bytes(name)
}

// Float32 returns the tensor converted to a new []float32 (row-major, Info's shape).
func (s *Set) Float32(name string) ([]float32, error) {
	f, err := s.file(name)
	if err != nil {
		return nil, err
	}
	return f.Float32(name)
}

// Float32Into converts the tensor into dst, whose length must equal its element count.
func (s *Set) Float32Into(dst []float32, name string) error {
	f, err := s.file(name)
	if err != nil {
		return err
	}
	return f.Float32Into(dst, name)
}

// Close unmaps every file.
func (s *Set) Close() error {
	var errs []error
	for _, f := range s.files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}
