/* dlist: intrusive doubly-linked lists, in the spirit of BSD's <sys/queue.h> LIST_ and
 * TAILQ_. The node struct carries the links (two pointer fields of its own type, named by
 * the caller, so one node can sit in lists with different link fields); the owner keeps
 * the head pointer, and for the _TAILED forms a tail pointer too. A NULL head is the empty
 * list. Macros, because the links are typed: every argument but prev and next is an
 * lvalue evaluated more than once, so pass plain names, not expressions with effects.
 * Not thread-safe; O(1) each. */
#ifndef RDC_DLIST_H
#define RDC_DLIST_H

/* Put node (not in this list) at the front of the list headed by head. */
#define DLIST_PUSH_FRONT(head, node, prev, next)                                           \
    do {                                                                                   \
        (node)->prev = NULL;                                                               \
        (node)->next = (head);                                                             \
        if (head)                                                                          \
            (head)->prev = (node);                                                         \
        (head) = (node);                                                                   \
    } while (0)

/* Put node (not in this list) at the back of the list from head to tail. */
#define DLIST_PUSH_BACK_TAILED(head, tail, node, prev, next)                               \
    do {                                                                                   \
        (node)->prev = (tail);                                                             \
        (node)->next = NULL;                                                               \
        if (tail)                                                                          \
            (tail)->next = (node);                                                         \
        else                                                                               \
            (head) = (node);                                                               \
        (tail) = (node);                                                                   \
    } while (0)

/* Take node out of the list headed by head (it must be in it); its links end NULL.
 * on_last runs when node was the last one, before its links are cleared. */
#define DLIST_UNLINK_(head, node, prev, next, on_last)                                      \
    do {                                                                                   \
        if ((node)->prev)                                                                  \
            (node)->prev->next = (node)->next;                                             \
        else                                                                               \
            (head) = (node)->next;                                                         \
        if ((node)->next)                                                                  \
            (node)->next->prev = (node)->prev;                                             \
        else                                                                               \
            on_last;                                                                       \
        (node)->prev = (node)->next = NULL;                                                \
    } while (0)

#define DLIST_UNLINK(head, node, prev, next) DLIST_UNLINK_(head, node, prev, next, (void)0)

/* The same for a list that keeps a tail pointer. */
#define DLIST_UNLINK_TAILED(head, tail, node, prev, next)                                  \
    DLIST_UNLINK_(head, node, prev, next, (tail) = (node)->prev)

#endif
