// Timing tool for the CUDA ViT step (being written).
int main() { return 0; }
