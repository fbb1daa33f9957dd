#include <cstdio>
int main() { std::puts("attn"); return 0; }
