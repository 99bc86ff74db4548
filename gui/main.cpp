// Placeholder: implemented by its owner.
int main() { return 0; }
