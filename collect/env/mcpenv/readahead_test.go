package mcpenv_test

import (
	"strings"
	"testing"
)

// A print on stdout that reaches the session in one read with a large
// message after it is still quoted. The SDK's decoder reads as far ahead
// as its buffer, grown by an earlier large message (here a 40 KiB tools
// list), allows, and the quote was taken from the last 8 KiB read: the
// print before the 30 KiB tool result fell out of it, and the error said
// only "invalid character 'c'". The server writes the print and the
// result in one write, as a block-buffered stdout flushes them.
func TestServerPrintBeforeLargeResultQuoted(t *testing.T) {
	pre := `import os
class OneWrite:
    # What is written goes out in one write at flush: the print and the
    # response after it reach the pipe together.
    def __init__(self):
        self.parts = []
    def write(self, s):
        self.parts.append(s)
        return len(s)
    def flush(self):
        data, self.parts = "".join(self.parts).encode(), []
        while data:
            data = data[os.write(1, data):]
sys.stdout = OneWrite()
import server
server.TOOLS[0]["description"] = "d" * 40000
def call_tool(name, args):
    sys.stdout.write("calling %s with %s\n" % (name, args))
    return "x" * 30000, False
server.call_tool = call_tool`
	err := playPeru(t, printingServer(t, pre, false))
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), `"calling capital with {'country': 'Peru'}"`) || !strings.Contains(err.Error(), "write logs to stderr") {
		t.Errorf("server printing before a 30 KiB result: %v; want the line quoted and where logs go", err)
	}
}
