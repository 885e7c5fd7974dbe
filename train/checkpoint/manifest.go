package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/runfolder"
)

// Manifest records which input files incremental runs consumed.
type Manifest struct {
	Consumed []FileEntry `json:"consumed"`
	// Pending is the session in progress: set before its first step is
	// trained, cleared (its files moved to Consumed) after its last. A run
	// that finds it set resumes that session instead of starting a new one.
	Pending *Session `json:"pending,omitempty"`
}

// FileEntry identifies one input file by name and content.
type FileEntry struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	Step   int    `json:"step,omitempty"` // the run's step after the session that consumed it
}

// Session is one incremental training session: which files, from which step
// to which.
type Session struct {
	Files     []FileEntry `json:"files"`
	StartStep int         `json:"start_step"`
	EndStep   int         `json:"end_step"`
}

// Has reports whether a file with this checksum was consumed.
func (m *Manifest) Has(sum string) bool {
	for _, e := range m.Consumed {
		if e.SHA256 == sum {
			return true
		}
	}
	return false
}

// ReadManifest reads manifest.json (empty when absent).
func (r *Run) ReadManifest() (Manifest, error) {
	var m Manifest
	path := filepath.Join(r.Dir, ManifestName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("checkpoint: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("checkpoint: %s: %w", path, err)
	}
	return m, nil
}

// WriteManifest replaces manifest.json atomically.
func (r *Run) WriteManifest(m Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("checkpoint: manifest: %w", err)
	}
	return runfolder.WriteFile(filepath.Join(r.Dir, ManifestName), append(b, '\n'))
}

// HashFile returns the entry (sha256, size) of the input file at path (a
// path or URL, as fileset names inputs).
func HashFile(ctx context.Context, path string) (FileEntry, error) {
	f, err := fileset.Open(ctx, path)
	if err != nil {
		return FileEntry{}, fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f.Reader())
	if err != nil {
		return FileEntry{}, fmt.Errorf("checkpoint: hash %s: %w", path, err)
	}
	return FileEntry{Path: path, SHA256: hex.EncodeToString(h.Sum(nil)), Size: n}, nil
}
