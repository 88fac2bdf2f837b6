from django.http import HttpResponse


def home(request):
    return HttpResponse("Dockyard")


def login(request):
    return HttpResponse("login")
