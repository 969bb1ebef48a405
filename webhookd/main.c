/* webhookd: the admission webhook server (being written; see the project's issues). */
#include <stdio.h>

int main(void)
{
    fprintf(stderr, "webhookd: not implemented yet\n");
    return 3;
}
