package config

// The documentation's links: the README is short and links the reference
// in docs/, so a moved section or a renamed file must not leave a link
// pointing nowhere. Checked here because this package's tests are cheap and
// already run from a fixed place in the repository.

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository seen from this package.
const repoRoot = ".."

// docFiles is README.md and every docs/*.md, slash-separated from the root.
func docFiles(t *testing.T) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(matches) == 0 {
		t.Fatal("no docs/*.md")
	}
	files := []string{"README.md"}
	for _, m := range matches {
		files = append(files, "docs/"+filepath.Base(m))
	}
	return files
}

func readDoc(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	mdLink     = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	linkScheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// prose returns text without its fenced code blocks and code spans, where
// brackets and parentheses are not links.
func prose(text string) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || strings.HasPrefix(line, "    ") && !strings.HasPrefix(strings.TrimSpace(line), "-") {
			continue
		}
		b.WriteString(codeSpan.ReplaceAllString(line, ""))
		b.WriteByte('\n')
	}
	return b.String()
}

// anchors returns the heading anchors of a markdown text as GitHub makes
// them: lower case, punctuation dropped, spaces as hyphens, a repeated
// anchor suffixed -1, -2….
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		for i := 1; out[a]; i++ {
			a = fmt.Sprintf("%s-%d", b.String(), i)
		}
		out[a] = true
	}
	return out
}

// TestDocLinks checks that every relative link in README.md and docs/*.md
// names a file or directory that exists (and, with a #fragment into a
// markdown file, one of its headings), and that README.md links every
// docs/*.md.
func TestDocLinks(t *testing.T) {
	files := docFiles(t)
	fromReadme := map[string]bool{}
	for _, file := range files {
		text := readDoc(t, file)
		for _, m := range mdLink.FindAllStringSubmatch(prose(text), -1) {
			link := m[1]
			if linkScheme.MatchString(link) {
				continue
			}
			target, fragment, _ := strings.Cut(link, "#")
			resolved := file
			if target != "" {
				resolved = path.Clean(path.Join(path.Dir(file), target))
				if strings.HasPrefix(resolved, "../") {
					t.Errorf("%s: link %q leaves the repository", file, link)
					continue
				}
				if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(resolved))); err != nil {
					t.Errorf("%s: link %q: no such file %s", file, link, resolved)
					continue
				}
			}
			if file == "README.md" {
				fromReadme[resolved] = true
			}
			if fragment != "" {
				if !strings.HasSuffix(resolved, ".md") {
					t.Errorf("%s: link %q: a fragment into a file that is not markdown", file, link)
					continue
				}
				if !anchors(readDoc(t, resolved))[fragment] {
					t.Errorf("%s: link %q: %s has no heading #%s", file, link, resolved, fragment)
				}
			}
		}
	}
	for _, file := range files[1:] {
		if !fromReadme[file] {
			t.Errorf("README.md does not link %s", file)
		}
	}
}
