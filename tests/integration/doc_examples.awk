# Extracts the code blocks of README.md and docs/*.md (Markdown) and of the man pages (roff)
# for test_examples.sh. A marked block follows its marker:
#   Markdown:   <!-- example -->, <!-- example config -->, <!-- example daemon -->,
#               <!-- example skip: why -->   (an HTML comment: invisible when rendered)
#               before an indented (4 blanks) or fenced code block;
#   man pages:  .\" example ...  (a roff comment) before .EX/.EE or .nf/.fi.
# Every other block is printed as "unmarked", so the test can tell a shell example nobody
# marked. Output, one block after another:
#   @@block FILE:LINE KIND REASON...
#   the block's lines, as a reader sees them (roff escapes undone)
#   @@end
# Usage: awk -v format=md|man -f doc_examples.awk FILE
function start(kind_, line) {
    kind = kind_ == "" ? "unmarked" : kind_
    printf "@@block %s:%d %s\n", FILENAME, line, kind
    inblock = 1
    blanks = 0
}
function finish() {
    print "@@end"
    inblock = 0
    marker = ""
}
function roff(s) {
    gsub(/\\-/, "-", s); gsub(/\\e/, "\\", s); gsub(/\\&/, "", s); gsub(/\\\(aq/, "'", s)
    gsub(/\\\(dq/, "\"", s); gsub(/\\f[BIRP]/, "", s)
    return s
}
# The marker's text: "example" and what follows, in one line.
function marker_text(s) {
    s = substr(s, index(s, "example") + 7)
    sub(/^ */, "", s); sub(/ *-->.*$/, "", s); gsub(/[ \t]+/, " ", s)
    return s == "" ? "run" : s
}

format == "md" && incomment {
    comment = comment " " $0
    if ($0 ~ /-->/) { incomment = 0; marker = marker_text(comment); markerline = FNR }
    next
}
format == "md" && infence {
    if ($0 ~ /^```/) { infence = 0; finish(); next }
    print; next
}
format == "md" && inblock {
    if ($0 ~ /^    /) { for (; blanks > 0; blanks--) print ""; print substr($0, 5); next }
    if ($0 ~ /^[ \t]*$/) { blanks++; next }
    finish()        # and the line is looked at below, as any other
}
format == "md" && /^<!-- example/ {
    comment = $0
    if ($0 ~ /-->/) { marker = marker_text(comment); markerline = FNR } else incomment = 1
    next
}
format == "md" && /^```/ {       # an unmarked one is named with its language
    infence = 1; lang = substr($0, 4); start(marker != "" ? marker : "unmarked " lang, FNR); next
}
format == "md" && /^    / && prev_blank && !inlist {
    start(marker, FNR); print substr($0, 5); prev_blank = 0; next
}
format == "md" {
    if ($0 !~ /^[ \t]*$/ && marker != "" && FNR > markerline) {
        printf "@@orphan %s:%d %s\n", FILENAME, markerline, marker; marker = ""
    }
    # A list item's continuation is indented too: not a code block.
    if ($0 ~ /^- /) inlist = 1; else if ($0 ~ /^[ \t]*$/) inlist = 0
    prev_blank = $0 ~ /^[ \t]*$/
    next
}

format == "man" && /^\.\\" example/ { marker = marker_text($0); next }
format == "man" && !inblock && /^\.(EX|nf)/ { start(marker, FNR); next }
format == "man" && inblock && /^\.(EE|fi)/ { finish(); next }
format == "man" && inblock && /^\./ { next }       # .RS and the like inside a block
format == "man" && inblock { print roff($0); next }
format == "man" && marker != "" && !/^\.(PP|RS|RE|IP|sp|br)/ {
    printf "@@orphan %s:%d %s\n", FILENAME, FNR, marker; marker = ""
}

END { if (inblock) finish() }
