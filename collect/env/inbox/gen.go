package inbox

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Email is one message of the synthetic inbox.
type Email struct {
	ID      string `json:"id"`
	Thread  string `json:"thread"`
	From    string `json:"from"`
	To      string `json:"to"`
	Date    string `json:"date"` // YYYY-MM-DD
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

// Question is one scenario: a question whose answer is in one email.
type Question struct {
	ID       string `json:"id"`
	Question string `json:"question"`
	Answer   string `json:"answer"`
	SourceID string `json:"source_id"`
	Kind     string `json:"kind"`
}

// Inbox is a generated mailbox with its questions.
type Inbox struct {
	Owner     string
	Emails    []Email
	Questions []Question
}

var (
	firstNames = []string{"Ana", "Ben", "Chloe", "Dev", "Elif", "Femi", "Grace", "Hugo", "Ines", "Jonas", "Kira", "Liam", "Maya", "Noor", "Omar", "Priya"}
	lastNames  = []string{"Alvarez", "Brooks", "Chen", "Dubois", "Eriksen", "Fischer", "Garcia", "Haddad", "Ito", "Jensen", "Kowalski", "Lindqvist"}
	cities     = []string{"Denver", "Lisbon", "Osaka", "Nairobi", "Toronto", "Krakow", "Santiago", "Dublin", "Hanoi", "Zurich", "Austin", "Perth"}
	projects   = []string{"Falcon", "Juniper", "Atlas", "Cobalt", "Meridian", "Nimbus", "Quartz", "Sequoia", "Tundra", "Vesper", "Willow", "Zephyr"}
	fillers    = []struct{ subject, body string }{
		{"Lunch on Friday?", "Anyone up for lunch on Friday? The new noodle place opened near the office."},
		{"Weekly newsletter", "This week: the kitchen will be cleaned on Thursday, and the printer on floor 3 is fixed."},
		{"Re: parking", "Reminder that the visitor spots are for guests only. Thanks for understanding."},
		{"Book club", "We are reading a mystery novel this month. Meeting in the library at 6pm."},
		{"IT maintenance", "Servers will be patched overnight. Save your work before leaving."},
		{"Team photo", "The photographer comes next week. Please wear something without logos."},
		{"Holiday schedule", "The office closes for two days at the end of the month. Plan accordingly."},
		{"Coffee machine", "The coffee machine on floor 2 needs descaling; please do not use it today."},
	}
)

// Generate builds the inbox for seed: about 4 fact emails per entity kind
// with near-miss distractors, filler mail, and a question per fact.
func Generate(seed int64) Inbox {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x696e626f78))
	person := func() string {
		return firstNames[rng.IntN(len(firstNames))] + " " + lastNames[rng.IntN(len(lastNames))]
	}
	addr := func(p string) string { return strings.ToLower(strings.ReplaceAll(p, " ", ".")) + "@example.com" }
	owner := person()
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	date := func() string { return start.AddDate(0, 0, rng.IntN(365)).Format("2006-01-02") }
	code := func() string {
		const a = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
		b := make([]byte, 6)
		for i := range b {
			b[i] = a[rng.IntN(len(a))]
		}
		return string(b)
	}
	var ib Inbox
	ib.Owner = owner
	add := func(from, subject, body string) string {
		id := fmt.Sprintf("m%04d", len(ib.Emails)+1)
		ib.Emails = append(ib.Emails, Email{ID: id, Thread: fmt.Sprintf("t%04d", len(ib.Emails)/2+1), From: addr(from), To: addr(owner), Date: date(), Subject: subject, Body: body})
		return id
	}
	ask := func(kind, q, a, src string) {
		ib.Questions = append(ib.Questions, Question{ID: fmt.Sprintf("q%03d", len(ib.Questions)+1), Question: q, Answer: a, SourceID: src, Kind: kind})
	}
	perm := func(xs []string) []string {
		out := append([]string(nil), xs...)
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	for _, city := range perm(cities)[:8] {
		c, d := code(), date()
		id := add("Travel Desk", "Flight confirmation: "+city, fmt.Sprintf("Your flight to %s on %s is confirmed. Confirmation code: %s. Please arrive two hours early.", city, d, c))
		add("Travel Desk", "Hotel booking in "+city, fmt.Sprintf("Your hotel in %s is booked for three nights. Booking reference: %s.", city, code()))
		ask("flight", fmt.Sprintf("What is the confirmation code for my flight to %s?", city), c, id)
	}
	for _, p := range perm(projects)[:8] {
		room := fmt.Sprintf("%d%c", 1+rng.IntN(9), 'A'+rune(rng.IntN(6)))
		id := add(person(), fmt.Sprintf("Room for the %s review", p), fmt.Sprintf("The %s review will be held in room %s. Bring the latest slides.", p, room))
		add(person(), fmt.Sprintf("%s review agenda", p), fmt.Sprintf("Agenda for the %s review: status, risks, next steps.", p))
		ask("room", fmt.Sprintf("Which room is the %s review in?", p), room, id)
	}
	for _, p := range perm(projects)[:8] {
		amt := fmt.Sprintf("$%d,%03d", 10+rng.IntN(90), 100*rng.IntN(10))
		approver := person()
		id := add(approver, fmt.Sprintf("%s budget approved", p), fmt.Sprintf("%s approved a budget of %s for project %s.", approver, amt, p))
		add(person(), fmt.Sprintf("%s budget request", p), fmt.Sprintf("We would like to request more budget for project %s next quarter.", p))
		ask("budget", fmt.Sprintf("What budget was approved for project %s?", p), amt, id)
	}
	for _, p := range perm(projects)[:8] {
		d := date()
		id := add(person(), fmt.Sprintf("%s deadline moved", p), fmt.Sprintf("The deadline for the %s report moved to %s.", p, d))
		ask("deadline", fmt.Sprintf("When is the %s report deadline?", p), d, id)
	}
	seen := map[string]bool{owner: true}
	for range 6 {
		p := person()
		if seen[p] {
			continue
		}
		seen[p] = true
		phone := fmt.Sprintf("+1 555 %03d %04d", rng.IntN(1000), rng.IntN(10000))
		id := add(p, "New phone number", fmt.Sprintf("Hi, my new phone number is %s. Regards, %s", phone, p))
		ask("phone", fmt.Sprintf("What is %s's new phone number?", p), phone, id)
	}
	for range 40 {
		f := fillers[rng.IntN(len(fillers))]
		add(person(), f.subject, f.body)
	}
	// Mail arrives in date order; ids follow it so they say nothing of the facts.
	sort.SliceStable(ib.Emails, func(i, j int) bool { return ib.Emails[i].Date < ib.Emails[j].Date })
	rename := map[string]string{}
	for i := range ib.Emails {
		id := fmt.Sprintf("m%04d", i+1)
		rename[ib.Emails[i].ID] = id
		ib.Emails[i].ID = id
	}
	for i := range ib.Questions {
		ib.Questions[i].SourceID = rename[ib.Questions[i].SourceID]
	}
	return ib
}

// questionKeys maps a question to search keywords and the pattern that
// finds its answer in an email body: the scripted searcher's knowledge.
var questionKeys = []struct {
	q      *regexp.Regexp
	keys   func(m []string) []string
	answer func(m []string) *regexp.Regexp
}{
	{regexp.MustCompile(`confirmation code for my flight to (\w+)`), func(m []string) []string { return []string{"flight", m[1]} },
		func(m []string) *regexp.Regexp {
			return regexp.MustCompile(`flight to ` + m[1] + `.*Confirmation code: (\w+)`)
		}},
	{regexp.MustCompile(`Which room is the (\w+) review in`), func(m []string) []string { return []string{m[1], "room"} },
		func(m []string) *regexp.Regexp {
			return regexp.MustCompile(m[1] + ` review will be held in room (\w+)`)
		}},
	{regexp.MustCompile(`budget was approved for project (\w+)`), func(m []string) []string { return []string{m[1], "approved"} },
		func(m []string) *regexp.Regexp { return regexp.MustCompile(`budget of (\$[\d,]+) for project ` + m[1]) }},
	{regexp.MustCompile(`When is the (\w+) report deadline`), func(m []string) []string { return []string{m[1], "deadline"} },
		func(m []string) *regexp.Regexp { return regexp.MustCompile(m[1] + ` report moved to ([\d-]+)`) }},
	{regexp.MustCompile(`What is (\w+ \w+)'s new phone number`), func(m []string) []string { return []string{"phone", strings.Fields(m[1])[1]} },
		func(m []string) *regexp.Regexp {
			return regexp.MustCompile(`new phone number is ([+\d ]+)\. Regards, ` + m[1])
		}},
}
