package fileset

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

const uploadChildEnv = "HONE_FILESET_UPLOAD_CHILD"

// TestS3UploadStagingGoneAfterKill starts a child that stages an object
// store output (Create and Write, no Commit yet) and kills it with
// SIGKILL, as the OOM killer would: the staged bytes must not stay behind
// in $TMPDIR, where each killed run would leave an output's size until the
// disk fills.
func TestS3UploadStagingGoneAfterKill(t *testing.T) {
	if name := os.Getenv(uploadChildEnv); name != "" {
		stageUpload(t, name)
		return
	}
	s3 := newFaultyS3(t, "bkt")
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestS3UploadStagingGoneAfterKill$", "-test.count=1")
	cmd.Env = append(os.Environ(), uploadChildEnv+"="+s3.url("bkt", "out/a.parquet"), "TMPDIR="+tmp)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// The child waits on its stdin, held open here until it is killed.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "STAGED\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q (%v); stderr:\n%s", line, err, stderr.Bytes())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	left, err := filepath.Glob(filepath.Join(tmp, ".hone-upload.tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("after SIGKILL, staged uploads left in $TMPDIR: %v", left)
	}
}

// stageUpload is the child's side: it writes 1 MiB to the output name,
// says STAGED and waits for its kill (stdin stays open).
func stageUpload(t *testing.T, name string) {
	out, err := Create(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := out.Write(bytes.Repeat([]byte("x"), 1<<20)); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("STAGED\n")
	io.Copy(io.Discard, os.Stdin)
}
