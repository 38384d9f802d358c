/*
 * read_part.c: read a placement written by `grapeshot place --out placement.part` and print
 * each MPI rank's partitions, one line per rank:
 *
 *     rank 0: 0 5 6 11
 *     rank 1: 1 2 7 8
 *
 * The .part file is METIS's partition-file format: line i (counting from 0) holds the node
 * of partition i, a decimal integer >= 0, and nothing else; partition ids flatten the
 * partition grid in C order (docs/formats.md). A rank is a node there (one rank a node).
 *
 * A per-rank file (`grapeshot place --ranks N --out placement.part`) gives each partition
 * its MPI rank, and opens with one comment line saying the grid and the counts:
 *
 *     # grapeshot placement: parts 16x16, 256 partitions, 4 ranks
 *     0
 *     0
 *     1
 *
 * line i + 2 holding partition i's rank. The header is checked against the lines (as many
 * as its partitions, every rank below its ranks), and its ranks against the ranks this
 * program runs on: a file written for 4 ranks is refused on 2.
 *
 * Plain C, no library but libc; RANKS, if given, is the rank count to check the file
 * against (else the header's, or the largest number in the file + 1):
 *
 *     cc -std=c99 -O2 -Wall -o read_part examples/read_part.c
 *     ./read_part placement.part [RANKS]
 *
 * With MPI, what an MPI code does at start-up: rank 0 reads the file and checks it against
 * MPI_Comm_size, every rank gets the owner of every partition (its halo exchange needs its
 * neighbours' owners) and keeps its own partitions; rank 0 then prints every rank's.
 *
 *     mpicc -std=c99 -O2 -Wall -DUSE_MPI -o read_part examples/read_part.c
 *     mpiexec -n 4 ./read_part placement.part
 *
 * A bad file, or one written for another rank count, stops with one line naming it (and
 * the line at fault) and exit status 1.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef USE_MPI
#include <mpi.h>
#endif

/* Longest line accepted: a number is at most 10 digits (INT_MAX), plus blanks. */
#define LINE_MAX_CHARS 64
/* Longest header line accepted. */
#define HEADER_MAX_CHARS 256

static const char *program = "read_part";
static const char *header_form =
    "'# grapeshot placement: parts PXxPY[xPZ], P partitions, N ranks'";

/* Print one line about the file (and its line, if > 0), and stop with status 1. Called on
   one process only (rank 0 with MPI, before it tells the others how the reading went). */
static void fail(const char *path, long line, const char *what) {
    if (line > 0)
        fprintf(stderr, "%s: %s: line %ld: %s\n", program, path, line, what);
    else
        fprintf(stderr, "%s: %s: %s\n", program, path, what);
#ifdef USE_MPI
    int status = 1; /* the other ranks wait for this and stop too: one line, no hang */
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
#endif
    exit(1);
}

static int is_blank(const char *s) {
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
            return 0;
    return 1;
}

/* The number on one line: digits, surrounding blanks allowed; -1 if the line is not one.
   INT_MAX itself is refused so that the count of ranks, the largest + 1, is an int. */
static long parse_number(const char *text) {
    while (*text == ' ' || *text == '\t')
        text++;
    if (*text < '0' || *text > '9')
        return -1; /* strtol would also take a sign */
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno == ERANGE || value >= INT_MAX || !is_blank(end))
        return -1;
    return value;
}

/* A count of 1 to 18 digits at *s, moving *s past it; -1 if there is none. */
static long long read_count(const char **s) {
    long long value = 0;
    int digits = 0;
    for (; **s >= '0' && **s <= '9'; (*s)++, digits++) {
        if (digits == 18)
            return -1;
        value = value * 10 + (**s - '0');
    }
    return digits ? value : -1;
}

/* Move *s past `text` (then, if `plural`, an optional 's'); 0 if it is not there. */
static int skip(const char **s, const char *text, int plural) {
    size_t n = strlen(text);
    if (strncmp(*s, text, n) != 0)
        return 0;
    *s += n;
    if (plural && **s == 's')
        (*s)++;
    return 1;
}

/* The header `# grapeshot placement: parts 16x16, 256 partitions, 4 ranks` on `line`:
   its partitions and ranks, after checking that the grid (1 to 3 sizes) multiplies to the
   partitions and the ranks are 1 to INT_MAX; a bad header stops the program. */
static void parse_header(const char *path, const char *line, long *parts, int *ranks) {
    char what[128];
    const char *s = line;
    long long product = 1, size, n_parts = -1, n_ranks = -1;
    int axes = 0, overflow = 0, ok = skip(&s, "# grapeshot placement: parts ", 0);
    while (ok && axes < 3 && (size = read_count(&s)) >= 1) {
        overflow |= product > LLONG_MAX / size;
        product = overflow ? 1 : product * size;
        axes++;
        if (!skip(&s, "x", 0))
            break;
    }
    ok = ok && axes > 0 && s[-1] != 'x' && skip(&s, ", ", 0);
    ok = ok && (n_parts = read_count(&s)) >= 0 && skip(&s, " partition", 1) && skip(&s, ", ", 0);
    ok = ok && (n_ranks = read_count(&s)) >= 0 && skip(&s, " rank", 1) && is_blank(s);
    if (!ok) {
        snprintf(what, sizeof what, "expected a header %s", header_form);
        fail(path, 1, what);
    }
    if (overflow || product != n_parts || n_parts > LONG_MAX) {
        snprintf(what, sizeof what, "its grid is not its %lld partitions", n_parts);
        fail(path, 1, what);
    }
    if (n_ranks < 1 || n_ranks > INT_MAX) {
        snprintf(what, sizeof what, "says %lld ranks; expected 1 to %d", n_ranks, INT_MAX);
        fail(path, 1, what);
    }
    *parts = (long)n_parts;
    *ranks = (int)n_ranks;
}

/* A placement as read: rank_of[i] is partition i's rank (its node, in a node file). */
struct placement {
    int *rank_of;
    long parts;
    int ranks;      /* the header's ranks, else the largest rank + 1 */
    int has_header; /* whether the file is per-rank, with a header */
};

/* Read the file `path`; a bad file stops the program with one line. */
static struct placement read_placement(const char *path) {
    struct placement p = {NULL, 0, 0, 0};
    FILE *file = fopen(path, "r");
    if (file == NULL)
        fail(path, 0, strerror(errno));
    long header_parts = 0, capacity = 0, line = 0, first_blank = 0;
    int header_ranks = 0;
    const char *unit = "node";
    char what[128];
    char buffer[HEADER_MAX_CHARS + 2];
    while (fgets(buffer, sizeof buffer, file) != NULL) {
        line++;
        size_t length = strlen(buffer);
        int cut = length > 0 && buffer[length - 1] != '\n' && !feof(file);
        if (line == 1 && buffer[0] == '#') {
            if (cut)
                fail(path, line, "line too long for a header");
            parse_header(path, buffer, &header_parts, &header_ranks);
            p.has_header = 1;
            unit = "rank";
            continue;
        }
        /* Content beyond LINE_MAX_CHARS, newline aside, is too long for one number. */
        while (length > 0 && (buffer[length - 1] == '\n' || buffer[length - 1] == '\r'))
            length--;
        if (cut || length > LINE_MAX_CHARS) {
            snprintf(what, sizeof what, "line too long; expected one %s number", unit);
            fail(path, line, what);
        }
        if (is_blank(buffer)) {
            /* Blank lines may end the file (an editor's last newline), not sit inside it:
               they would shift every partition after them. */
            if (first_blank == 0)
                first_blank = line;
            continue;
        }
        if (first_blank != 0) {
            snprintf(what, sizeof what, "blank line; expected one %s number per line", unit);
            fail(path, first_blank, what);
        }
        long value = parse_number(buffer);
        if (p.has_header && (value < 0 || value >= header_ranks)) {
            snprintf(what, sizeof what, "expected a rank in [0, %d] (line 1 says %d ranks)",
                     header_ranks - 1, header_ranks);
            fail(path, line, what);
        }
        if (value < 0)
            fail(path, line, "expected a node number in [0, 2147483646]");
        if (p.parts == capacity) {
            capacity = capacity ? 2 * capacity : 1024;
            int *grown = realloc(p.rank_of, (size_t)capacity * sizeof *p.rank_of);
            if (grown == NULL)
                fail(path, line, "out of memory");
            p.rank_of = grown;
        }
        p.rank_of[p.parts++] = (int)value;
        if (value >= p.ranks)
            p.ranks = (int)value + 1;
    }
    if (ferror(file))
        fail(path, 0, strerror(errno));
    fclose(file);
    if (p.has_header) {
        if (p.parts != header_parts) {
            snprintf(what, sizeof what, "says %ld partitions, and the file has %ld lines after it",
                     header_parts, p.parts);
            fail(path, 1, what);
        }
        p.ranks = header_ranks;
    } else if (p.parts == 0) {
        fail(path, 0, "no partitions; expected one node number per line");
    }
    return p;
}

/* Refuse a file written for other ranks than the `ranks` this run has (`source` says
   where that count comes from): one line naming the file and both counts. */
static void check_ranks(const char *path, const struct placement *p, int ranks,
                        const char *source) {
    char what[160];
    if (p->has_header && p->ranks != ranks)
        snprintf(what, sizeof what, "written for %d ranks; this run has %d (%s)", p->ranks,
                 ranks, source);
    else if (!p->has_header && p->ranks > ranks)
        snprintf(what, sizeof what, "names %d ranks (0 to %d); this run has %d (%s)", p->ranks,
                 p->ranks - 1, ranks, source);
    else
        return;
    fail(path, 0, what);
}

/* Print "rank r: ..." for every rank, its partitions in increasing order: `first[r]` is
   where rank r's start in `parts_by_rank`. */
static void print_ranks(int ranks, const long *first, const long *parts_by_rank) {
    for (int r = 0; r < ranks; r++) {
        printf("rank %d:", r);
        for (long k = first[r]; k < first[r + 1]; k++)
            printf(" %ld", parts_by_rank[k]);
        printf("\n");
    }
}

#ifdef USE_MPI
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiexec -n RANKS %s FILE.part\n", program);
        MPI_Finalize();
        return 2;
    }
    const char *path = argv[1];
    struct placement p = {NULL, 0, 0, 0};
    if (rank == 0) {
        p = read_placement(path);
        check_ranks(path, &p, size, "MPI_Comm_size");
    }
    int status = 0; /* rank 0 read the file: fail() sent 1 instead */
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (status != 0) {
        MPI_Finalize();
        return 1;
    }
    /* Every rank gets the owner of every partition, a chunk of at most INT_MAX at a time. */
    MPI_Bcast(&p.parts, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (rank != 0 && (p.rank_of = malloc((size_t)p.parts * sizeof *p.rank_of)) == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (long lo = 0; lo < p.parts; lo += INT_MAX) {
        int n = (int)(p.parts - lo < INT_MAX ? p.parts - lo : INT_MAX);
        MPI_Bcast(p.rank_of + lo, n, MPI_INT, 0, MPI_COMM_WORLD);
    }
    /* This rank's own partitions, in increasing order. */
    long n_mine = 0;
    for (long i = 0; i < p.parts; i++)
        n_mine += p.rank_of[i] == rank;
    long *mine = malloc((size_t)(n_mine ? n_mine : 1) * sizeof *mine);
    if (mine == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (long i = 0, k = 0; i < p.parts; i++)
        if (p.rank_of[i] == rank)
            mine[k++] = i;

    /* For this example's output only: rank 0 gathers and prints every rank's partitions
       (a real code keeps `mine` and goes on). */
    int count = (int)n_mine;
    int *counts = NULL, *displs = NULL;
    long *first = NULL, *all = NULL;
    if (rank == 0) {
        counts = malloc((size_t)size * sizeof *counts);
        displs = malloc((size_t)size * sizeof *displs);
        first = malloc(((size_t)size + 1) * sizeof *first);
        all = malloc((size_t)(p.parts ? p.parts : 1) * sizeof *all);
        if (counts == NULL || displs == NULL || first == NULL || all == NULL)
            MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Gather(&count, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        first[0] = 0;
        for (int r = 0; r < size; r++) {
            displs[r] = (int)first[r];
            first[r + 1] = first[r] + counts[r];
        }
    }
    MPI_Gatherv(mine, count, MPI_LONG, all, counts, displs, MPI_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0)
        print_ranks(size, first, all);
    free(all);
    free(first);
    free(displs);
    free(counts);
    free(mine);
    free(p.rank_of);
    MPI_Finalize();
    return 0;
}
#else
int main(int argc, char **argv) {
    long want = 0;
    if (argc == 3) {
        char *end;
        errno = 0;
        want = strtol(argv[2], &end, 10);
        if (errno == ERANGE || *end != '\0' || argv[2][0] < '0' || argv[2][0] > '9' ||
            want < 1 || want > INT_MAX)
            want = 0;
    }
    if (argc < 2 || argc > 3 || (argc == 3 && want == 0)) {
        fprintf(stderr, "usage: %s FILE.part [RANKS]\n", program);
        return 2;
    }
    const char *path = argv[1];
    struct placement p = read_placement(path);
    if (want > 0) {
        check_ranks(path, &p, (int)want, "the RANKS argument");
        p.ranks = (int)want;
    }

    /* Partitions grouped by rank in one pass (a counting sort): first[r] is where rank r's
       partitions start in by_rank, in increasing partition order. */
    long *first = calloc((size_t)p.ranks + 1, sizeof *first);
    long *by_rank = malloc((size_t)p.parts * sizeof *by_rank);
    long *next = malloc((size_t)p.ranks * sizeof *next);
    if (first == NULL || by_rank == NULL || next == NULL)
        fail(path, 0, "out of memory");
    for (long i = 0; i < p.parts; i++)
        first[p.rank_of[i] + 1]++;
    for (int r = 0; r < p.ranks; r++)
        first[r + 1] += first[r];
    memcpy(next, first, (size_t)p.ranks * sizeof *next);
    for (long i = 0; i < p.parts; i++)
        by_rank[next[p.rank_of[i]]++] = i;
    print_ranks(p.ranks, first, by_rank);
    free(next);
    free(by_rank);
    free(first);
    free(p.rank_of);
    return 0;
}
#endif
