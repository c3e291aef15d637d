#!/usr/bin/awk -f
# A memory search in awk that speaks recall-kit's command protocol (JSON lines on stdin/stdout).
# Usage: awk -f overlap_search.awk CORPUS.tsv -   (CORPUS.tsv: one "id<TAB>lower-case words" a line;
# with mawk add -W interactive, else it waits for a block of input before answering a line)
# Score: how many distinct query words a memory holds. Hits best first, ties by id descending,
# memories sharing no word left out. Only the fields the protocol sends are read, by pattern.
BEGIN { FS = "\t" }
FNR == NR { ids[++n] = $1; text[$1] = " " $2 " "; next }
{
    line = $0
    qid = line; sub(/.*"query_id": *"/, "", qid); sub(/".*/, "", qid)
    q = line; sub(/.*"text": *"/, "", q); sub(/", *"k".*/, "", q)
    k = line; sub(/.*"k": */, "", k); sub(/[^0-9].*/, "", k); k += 0
    q = tolower(q); gsub(/[^a-z0-9]+/, " ", q)
    split("", words); nw = split(q, parts, " ")
    for (i = 1; i <= nw; i++) if (parts[i] != "") words[parts[i]] = 1
    m = 0
    for (i = 1; i <= n; i++) {
        s = 0
        for (w in words) if (index(text[ids[i]], " " w " ") > 0) s++
        if (s > 0) { m++; hid[m] = ids[i]; hs[m] = s }
    }
    # insertion sort: score descending, then id descending (string order, as recall-kit ties)
    for (i = 2; i <= m; i++) {
        a = hid[i]; b = hs[i]; j = i - 1
        while (j > 0 && (hs[j] < b || (hs[j] == b && (hid[j] "") < (a "")))) { hid[j + 1] = hid[j]; hs[j + 1] = hs[j]; j-- }
        hid[j + 1] = a; hs[j + 1] = b
    }
    out = "{\"query_id\": \"" qid "\", \"hits\": ["
    for (i = 1; i <= m && i <= k; i++) out = out (i > 1 ? ", " : "") "{\"id\": \"" hid[i] "\", \"score\": " hs[i] "}"
    print out "]}"
    fflush()
}
