// switchboard's entry point (the daemon is built in issue 2/3 work).
#include <cstdio>

int main() {
    std::fprintf(stderr, "switchboard: no command implemented yet\n");
    return 2;
}
